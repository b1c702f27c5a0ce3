"""The bytes the page gets per translation: the explorer's JSON payload for a 13-word and a 60-token sentence.

Usage: python bench/payload_size.py [--checkpoint checkpoints/en-de] [--json PATH]
Prints one JSON object: per sentence its source and target tokens, the weights' precision, the payload's bytes
as sent (JSON, what gradio streams: its queue's server-sent events are not compressed), with the norm maps
added (what "norm" asks for), the share of each part, and the payload gzipped for comparison. Translates
as the app does (the checkpoint's beam and length penalty) and adds the checkpoint's head analysis as the app
does. No timing: the numbers are the same on every machine for the same weights.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere without installing

# our own sentences: 13 words (17 pieces on en-de), and one of exactly 60 source pieces with <eos> on en-de
SENTENCES = {
    "13_words": "Yesterday my younger sister finally baked a huge chocolate cake for our neighbours.",
    "48_words": ("When the museum opened its new wing last spring, hundreds of curious visitors waited patiently in "
                  "the cold rain, because everyone wanted to see the enormous painting of a stormy harbour that an "
                  "unknown artist had once left behind in an old wooden barn near the quiet river."),
}


def json_bytes(value: object) -> int:
    """Bytes of `value` as the page receives it (gradio's JSON: compact separators, UTF-8)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def measure(checkpoint: Path) -> dict:
    """Payload sizes for each of SENTENCES with the checkpoint's own decoding settings."""
    from transformer.explorer.core.checkpoint_heads import head_info
    from transformer.explorer.maps.payload import attention_payload
    from transformer.translator import load_pretrained

    tr = load_pretrained(checkpoint)
    heads = head_info(checkpoint)
    out = {}
    for name, text in SENTENCES.items():
        t = tr.translate(text)
        att = tr.attention_for(t, 0)
        payload = attention_payload(att, model=checkpoint.name, source=text, translation=t.text, heads=heads,
                                    entities=t.entities)
        with_norms = attention_payload(att, model=checkpoint.name, source=text, translation=t.text, heads=heads,
                                       entities=t.entities, norms=tr.attention_for(t, 0, attention_measure="norm"))
        total = json_bytes(payload)
        weights = sum(json_bytes(payload["kinds"][k]["weights"]) for k in payload["kinds"])
        parts = {"weights": weights, "tokens": json_bytes(payload["tokens"]), "steps": json_bytes(payload["steps"]),
                 "rollout": json_bytes(payload["rollout"]), "heads": json_bytes(payload["heads"])}
        parts["rest"] = total - sum(parts.values())
        out[name] = {
            "words": len(text.split()), "src_tokens": len(att.src_tokens), "tgt_tokens": len(att.tgt_out_tokens),
            "weights_dtype": payload["kinds"]["encoder"]["weights"]["dtype"],
            "payload_kb": round(total / 1000, 1),
            "payload_with_norms_kb": round(json_bytes(with_norms) / 1000, 1),
            "gzipped_kb": round(len(gzip.compress(json.dumps(payload, separators=(",", ":")).encode())) / 1000, 1),
            "share_percent": {k: round(100 * v / total, 1) for k, v in parts.items()},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()
    checkpoint = Path(args.checkpoint)
    result = {"checkpoint": checkpoint.name, "sentences": measure(checkpoint)}
    print(json.dumps(result, indent=1))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, result)


if __name__ == "__main__":
    main()
