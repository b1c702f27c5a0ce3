"""Translate from the command line.

    python -m transformer.translate "My grey cat sleeps on the warm windowsill." "Two kids eat ice cream."
    echo "My grey cat sleeps on the warm windowsill." | python -m transformer.translate --method greedy
    python -m transformer.translate --n-best 3          # interactive prompt; empty line or Ctrl-D quits
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from .translator import MAX_BEAM_SIZE, Translator, load_pretrained

DEFAULT_CHECKPOINT = "checkpoints/en-de"  # the app's default model too (relative to where the command runs)


def _print_translation(tr: Translator, text: str, args: argparse.Namespace) -> None:
    r = tr.translate(text, method=args.method, beam_size=args.beam_size, length_penalty=args.length_penalty,
                     output_attentions=False)
    if r.truncated:
        print(f"[note: input cut to the model's {tr.max_source_tokens}-token limit]", file=sys.stderr)
    if args.n_best > 1:
        for i, c in enumerate(r.candidates[: args.n_best], 1):
            print(f"{i}\t{c.score:.4f}\t{c.log_prob:.4f}\t{c.text}")
    else:
        print(r.text)
    sys.stdout.flush()


def _input_lines(sentences: list[str]) -> Iterator[str]:
    """The sentences given, else stdin lines; at a terminal, a prompt until an empty line or Ctrl-D."""
    if sentences:
        yield from sentences
    elif sys.stdin.isatty():
        while (line := _prompt()) is not None and line.strip():
            yield line
    else:
        yield from (line.rstrip("\n") for line in sys.stdin)


def _prompt() -> str | None:
    try:
        return input("en> ")
    except EOFError:
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sentences", nargs="*", help="sentences to translate (default: read lines from stdin)")
    p.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT, help="checkpoint directory or Hub repo id")
    p.add_argument("--method", choices=["greedy", "beam"], default="beam")
    p.add_argument("--beam-size", type=int, help=f"1..{MAX_BEAM_SIZE} (default: the checkpoint's, else 5)")
    p.add_argument("--length-penalty", type=float,
                   help="default: the checkpoint's, chosen on val (generation_config.json), else 0.6")
    p.add_argument("--n-best", type=int, default=1, help="print this many candidates: rank, score, log-prob, text")
    args = p.parse_args(argv)
    try:
        tr = load_pretrained(args.checkpoint)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    status = 0
    for line in _input_lines(args.sentences):
        try:
            _print_translation(tr, line, args)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            print("")  # keep output lines aligned with input lines
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
