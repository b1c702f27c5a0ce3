"""Decoding latency of `translate(..., output_attentions=True)` against two references.

(a) the seed implementations' decoding: the whole prefix recomputed every
    step, hypotheses advanced one at a time in a Python loop (no cache);
(b) Hugging Face `MarianMTModel.generate` with the same architecture (random
    weights), forced to the same output length.

Ours includes the attention-capture pass; the references do not (we also time ours
without it). `linear_floor` times only the matrix multiplications any implementation of
this architecture must run for the same output, a lower bound in float32; `narrow_model`
runs the same search with d_model and d_ff cut to 16, so the arithmetic nearly vanishes
and what is left is eager PyTorch's cost per operation. For beam 5, `ours_with_search_recording`
is `translate(..., record_search=True)` (the search tree the app draws) and
`search_recording_overhead_pct` its cost over `ours_with_attention` (the goal: at most 20 %). All of them
are timed in interleaved rounds (one call of each per round), so a slow spell of a shared
machine hits every row alike and the speedups stay comparable. Prints one JSON object.

    python bench/decode_latency.py --threads 2 --repeats 30
    python bench/decode_latency.py --checkpoint checkpoints/en-de --compare checkpoints/multi30k-en-de

`--compare DIR` also times another checkpoint's `translate(..., output_attentions=True)` in the
same rounds and reports `ratio_vs_compare`: our p50 over its p50 (each model translates the same
sentence into its own output, whose length is reported beside it); and, loaded in int8 as the app
serves both, `int8_ratio_vs_compare`: our `int8_with_attention` over its `compare_int8_with_attention`.
Where the float32 ratio comes from: `linear_floor_ratio_vs_compare` (the two models' matrix multiplications
alone, each for its own output length) and `output_projection_ratio_vs_compare` (their vocabulary projections
alone), with `weights_per_step` / `compare_weights_per_step`, the float32 megabytes one decoding step reads.

int8: `int8_with_attention` / `int8_without_attention` are the same checkpoint loaded with
`load_pretrained(..., quantize="int8")` (what the app serves where the CPU has int8 kernels: the decoder and
output projection with int8 weights and each row's activations quantised on their own scale, batch-invariant;
attention drawn in float32), timed in the same rounds; `int8_per_batch_with_attention` is torch.ao's dynamic
quantisation (one activation scale per call, not batch-invariant), what the app served before;
`ours_*` is float32 (the search's linears in fixed row blocks, batch-invariant);
`int8_speedup_vs_fp32` = ours_with_attention / int8_with_attention and `int8_speedup_vs_marian` =
marian_generate / int8_with_attention (p50s); `int8_same_output` says whether int8 gave the float32
translation. With torchao installed, `torchao_int8_dynamic_with_attention` (Int8DynamicActivationInt8Weight)
and `torchao_int8_weight_only_with_attention` (Int8WeightOnly) quantise the same modules with torchao
instead, for the choice between the two libraries (`--no-torchao` skips them).
    pip install -r bench/requirements.txt   # for (b) and the torchao rows: transformers, torchao; benchmark-only
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)
from transformer.config import ModelConfig  # noqa: E402
from transformer.decoding import (  # noqa: E402
    Hypothesis, beam_search, default_max_len, greedy_decode, length_penalty_factor, next_token_log_probs,
)
from transformer.hub import PretrainedTransformer  # noqa: E402
from transformer.model import Transformer, causal_mask, padding_mask  # noqa: E402
from transformer.quantize import int8_search_model  # noqa: E402
from transformer.tokenizer import TextTokenizer, train_tokenizer  # noqa: E402
from transformer.translator import Translation, Translator, load_pretrained  # noqa: E402

SENTENCE = "A young man in a green jacket plays the guitar on the street."  # 13 words, our own


def seed_greedy(model: Transformer, src: torch.Tensor, max_len: int) -> list[int]:
    """Recompute the full prefix every step."""
    cfg = model.config
    src_mask = padding_mask(src, cfg.pad_id)
    memory, _ = model.encode(src, src_mask)
    ys = [cfg.bos_id]
    for t in range(max_len):
        tgt = torch.tensor([ys])
        hidden, _, _ = model.decode(tgt, memory, src_mask, causal_mask(len(ys))[None, None])
        token = int(next_token_log_probs(model, hidden, t, max_len).argmax(-1))
        ys.append(token)
        if token == cfg.eos_id:
            break
    return ys[1:]


def seed_beam(model: Transformer, src: torch.Tensor, k: int, alpha: float, max_len: int) -> list[int]:
    """Beam search as the seeds wrote it: a Python loop over hypotheses, each re-decoding its prefix."""
    cfg = model.config
    src_mask = padding_mask(src, cfg.pad_id)
    memory, _ = model.encode(src, src_mask)
    beams, finished = [([cfg.bos_id], 0.0)], []
    for t in range(max_len):
        candidates = []
        for ys, lp in beams:
            tgt = torch.tensor([ys])
            hidden, _, _ = model.decode(tgt, memory, src_mask, causal_mask(len(ys))[None, None])
            log_probs = next_token_log_probs(model, hidden, t, max_len)[0]
            top_lp, top_id = log_probs.topk(2 * k)
            candidates += [(ys + [int(i)], lp + float(v)) for v, i in zip(top_lp, top_id)]
        candidates.sort(key=lambda c: -c[1])
        beams = []
        for rank, (ys, lp) in enumerate(candidates):
            if ys[-1] == cfg.eos_id:
                if rank < k:
                    finished.append((ys[1:], lp / length_penalty_factor(len(ys) - 1, alpha)))
            elif len(beams) < k:
                beams.append((ys, lp))
        if len(finished) >= k or not beams:
            break
    return max(finished, key=lambda f: f[1])[0]


def random_translator(seed: int = 0) -> Translator:
    """~10M-parameter model with random weights and a small made-up-text tokenizer."""
    torch.manual_seed(seed)
    words = SENTENCE.lower().replace(".", "").split() + ["ein", "junger", "mann", "spielt", "gitarre", "auf", "der", "straße"]
    tok = TextTokenizer(train_tokenizer([" ".join(words)] * 10, vocab_size=300, min_frequency=1))
    cfg = ModelConfig(src_vocab_size=8000, tgt_vocab_size=8000, d_model=256, n_heads=8, n_encoder_layers=4,
                      n_decoder_layers=4, d_ff=1024, dropout=0.0)
    model = PretrainedTransformer(cfg).eval()
    return Translator(model, tok, name="random weights")


def percentiles(times: list[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)
    return {"p50_ms": round(statistics.median(ms), 1), "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1)}


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, limits: dict[str, int]) -> dict[str, list[float]]:
    """Time each function `repeats` times (fewer where `limits` says), one call of each per round, the order
    rotated each round: on a busy machine the first call of a round ran up to 15 % faster than the same call
    later in it."""
    for fn in fns.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for round_ in range(repeats):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            fn = fns[name]
            if round_ < limits.get(name, repeats):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return times


def linear_floor(model: Transformer, rows: int, steps: int, src_len: int):
    """Only the matrix multiplications of cached decoding, on random activations of the right shapes.

    Every implementation of this architecture runs these (encoder once, cross-attention
    keys/values once, then per step and layer the self/cross projections and the FFN, and
    the vocabulary projection), so their time is a floor for decoding without attention capture.
    """
    d = model.config.d_model
    x, src = torch.randn(rows, 1, d), torch.randn(1, src_len, d)

    def self_attn_ff(layer, h):
        attn = layer.self_attn
        for lin in (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj):
            lin(h)
        layer.ff.linear2(layer.ff.linear1(h).relu())

    def run() -> None:
        for layer in model.encoder.layers:
            self_attn_ff(layer, src)
        memory = src.expand(rows, -1, -1)
        for layer in model.decoder.layers:
            layer.cross_attn.k_proj(memory), layer.cross_attn.v_proj(memory)
        for _ in range(steps):
            for layer in model.decoder.layers:
                self_attn_ff(layer, x)
                layer.cross_attn.out_proj(layer.cross_attn.q_proj(x))
            model.project(x[:, -1])

    return run


def output_projection(model: Transformer, rows: int, steps: int) -> Callable[[], None]:
    """Only the vocabulary projection of `steps` decoding steps of `rows` hypotheses."""
    x = torch.randn(rows, model.config.d_model)

    def run() -> None:
        for _ in range(steps):
            model.project(x)

    return run


def megabytes_per_step(model: Transformer) -> dict[str, float]:
    """The float32 weights one cached decoding step reads: every decoder layer's self-attention, cross-attention
    query and output (its keys and values are cached), feed-forward, and the vocabulary projection."""
    layer_bytes = 0
    for layer in model.decoder.layers:
        cross = layer.cross_attn
        skip = {id(p) for p in (*cross.k_proj.parameters(), *cross.v_proj.parameters())}
        layer_bytes += sum(p.numel() * 4 for p in layer.parameters() if id(p) not in skip)
    projection = sum(p.numel() * 4 for p in model.generator.parameters())
    return {"decoder_layers_mb": round(layer_bytes / 1e6, 1), "output_projection_mb": round(projection / 1e6, 1)}


def narrow_search(model: Transformer, beam: int, steps: int, src_len: int) -> tuple[Callable[[], object], int]:
    """Our search over a model like `model` but 16 wide (d_model, d_ff), random weights -> (call, output length).

    The vocabulary, layers, heads, source length and output length stay, so the number
    of tensor operations per step is ours; only their arithmetic shrinks.
    """
    torch.manual_seed(0)
    narrow = Transformer(dataclasses.replace(model.config, d_model=16, d_ff=16, dropout=0.0)).eval()
    src = torch.randint(4, narrow.config.src_vocab_size, (1, src_len))
    src[0, -1] = narrow.config.eos_id
    if beam == 1:
        def search() -> list[Hypothesis]:
            return greedy_decode(narrow, src, max_len=steps).hypotheses
    else:
        def search() -> list[Hypothesis]:
            return beam_search(narrow, src, beam, 0.6, max_len=steps).hypotheses[0]
    with torch.inference_mode():
        return search, len(search()[0].tokens)


def marian_generate(cfg: ModelConfig, src_len: int, out_len: int, beam: int) -> Callable[[], object] | str:
    """`MarianMTModel.generate` with our architecture and random weights, as a no-argument call."""
    try:
        from transformers import MarianConfig, MarianMTModel
    except ImportError:
        return "transformers not installed (pip install -r bench/requirements.txt)"
    mcfg = MarianConfig(
        vocab_size=cfg.tgt_vocab_size, d_model=cfg.d_model, encoder_layers=cfg.n_encoder_layers,
        decoder_layers=cfg.n_decoder_layers, encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff, max_position_embeddings=cfg.max_len,
        activation_function=cfg.activation, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        pad_token_id=cfg.pad_id, eos_token_id=cfg.eos_id, decoder_start_token_id=cfg.bos_id,
        forced_eos_token_id=None, scale_embedding=True, share_encoder_decoder_embeddings=True,
    )
    torch.manual_seed(0)
    model = MarianMTModel(mcfg).eval()
    ids = torch.randint(4, cfg.src_vocab_size, (1, src_len))
    ids[0, -1] = cfg.eos_id
    # Same number of generated tokens as our output: min = max.
    kwargs = dict(max_new_tokens=out_len, min_new_tokens=out_len, num_beams=beam, do_sample=False,
                  early_stopping=False, length_penalty=0.6 if beam > 1 else 1.0)

    def generate() -> object:
        with torch.inference_mode():
            return model.generate(ids, **kwargs)

    return generate


def quantize_linear_int8_per_batch(modules: torch.nn.Module) -> torch.nn.Module:
    """torch.ao's dynamic quantisation (one activation scale per call: not batch-invariant), what the app
    served before `RowInt8Linear`, timed beside it."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao on every call
        warnings.simplefilter("ignore")
        return quantize_dynamic(modules, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8,
                                inplace=False)


def int8_translators(tr: Translator, torchao: bool) -> dict[str, Translator | str]:
    """The int8 paths to time: ours (`RowInt8Linear`, what the app serves in int8), torch.ao's per batch and, when asked
    and installed, torchao's dynamic int8 and int8 weight-only configs on the same modules (or why not)."""
    def same_weights(search: Transformer) -> Translator:
        return Translator(tr.model, tr.tokenizer, name=tr.name, truecaser=tr.truecaser, search_model=search,
                          precision="int8")

    paths: dict[str, Translator | str] = {"int8": same_weights(int8_search_model(tr.model)),
                                          "int8_per_batch": same_weights(int8_search_model(
                                              tr.model, quantize=quantize_linear_int8_per_batch))}
    if not torchao:
        return paths
    try:
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_
    except ImportError as err:
        return paths | {"torchao": f"torchao not installed ({err}; pip install -r bench/requirements.txt)"}
    for name, config in (("torchao_int8_dynamic", Int8DynamicActivationInt8WeightConfig),
                         ("torchao_int8_weight_only", Int8WeightOnlyConfig)):
        def with_torchao(modules, config=config):
            modules = copy.deepcopy(modules)
            quantize_(modules, config())
            return modules
        try:
            paths[name] = same_weights(int8_search_model(tr.model, quantize=with_torchao))
        except Exception as err:  # a torchao that cannot run this on this CPU: say so, time the rest
            paths[name] = f"failed: {type(err).__name__}: {str(err)[:200]}"
    return paths


def int8_rows(row: dict, int8_names: list[str], fp32_ms: float) -> None:
    """Speedups of the int8 paths over float32 and Marian (p50s), into `row`."""
    for name in int8_names:
        ms = row[f"{name}_with_attention"]["p50_ms"]
        row[f"{name}_speedup_vs_fp32"] = round(fp32_ms / ms, 2)
        if isinstance(row.get("marian_generate"), dict):
            row[f"{name}_speedup_vs_marian"] = round(row["marian_generate"]["p50_ms"] / ms, 2)



def compare_rows(row: dict, other_result: Translation, ours_ms: float) -> None:
    """The --compare checkpoint's output length and our p50 over its p50, float32 and (as served) int8."""
    row["compare_output_tokens"] = len(other_result.candidates[0].ids)
    row["ratio_vs_compare"] = round(ours_ms / row["compare_with_attention"]["p50_ms"], 3)
    for name in ("linear_floor", "output_projection"):
        row[f"{name}_ratio_vs_compare"] = round(row[name]["p50_ms"] / row[f"compare_{name}"]["p50_ms"], 3)
    if "int8_with_attention" in row:
        row["int8_ratio_vs_compare"] = round(row["int8_with_attention"]["p50_ms"]
                                             / row["compare_int8_with_attention"]["p50_ms"], 3)


def parse_args() -> argparse.Namespace:
    """The bench's flags."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default="checkpoints/multi30k-en-de", help="used if present, else random weights")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--seed-repeats", type=int, default=5, help="repeats for the slow seed decoding")
    p.add_argument("--compare", help="another checkpoint directory to time in the same rounds")
    p.add_argument("--sentence", default=SENTENCE, help="the English sentence to translate")
    p.add_argument("--no-torchao", action="store_true", help="skip the torchao rows")
    p.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    p.add_argument("--length-penalty", type=float, default=0.6,
                   help="for every model and reference alike (not each checkpoint's own default)")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    lp = args.length_penalty
    torch.set_num_threads(args.threads)
    tr = load_pretrained(args.checkpoint) if Path(args.checkpoint).is_dir() else random_translator()
    other = load_pretrained(args.compare) if args.compare else None
    other_int8 = load_pretrained(args.compare, quantize="int8") if args.compare else None
    sentence = args.sentence
    model = tr.model
    results: dict = {"model": tr.name, "parameters": model.num_parameters(), "threads": args.threads,
                     "sentence_words": len(sentence.split()), "cpu": cpu_model(), "length_penalty": lp}
    if other is not None:
        results.update(compare_model=other.name, compare_parameters=other.model.num_parameters(),
                       weights_per_step=megabytes_per_step(model), compare_weights_per_step=megabytes_per_step(other.model))
    int8 = int8_translators(tr, not args.no_torchao)
    results["int8_unavailable"] = {name: why for name, why in int8.items() if isinstance(why, str)}
    int8 = {name: t for name, t in int8.items() if isinstance(t, Translator)}
    for method, beam in (("greedy", 1), ("beam", 5)):
        r = tr.translate(sentence, method=method, beam_size=beam, length_penalty=lp, output_attentions=True)
        src = torch.tensor([r.src_ids])
        max_len = default_max_len(model, src.size(1))
        steps = len(r.candidates[0].ids)
        narrow = narrow_search(model, beam, steps, src.size(1))
        fns = {
            "ours_with_attention": lambda: tr.translate(sentence, method=method, beam_size=beam, length_penalty=lp, output_attentions=True),
            "ours_without_attention": lambda: tr.translate(sentence, method=method, beam_size=beam, length_penalty=lp,
                                                           output_attentions=False),
            "linear_floor": linear_floor(model, beam, steps, src.size(1)),
            "narrow_model": narrow[0],
            "seed_recompute_loop": (lambda: seed_greedy(model, src, max_len)) if beam == 1
            else (lambda: seed_beam(model, src, beam, lp, max_len)),
        }
        if beam == 5:
            fns["ours_with_search_recording"] = lambda: tr.translate(
                sentence, method=method, beam_size=beam, length_penalty=lp, output_attentions=True, record_search=True)
        if other is not None:
            fns["compare_with_attention"] = lambda: other.translate(sentence, method=method, beam_size=beam, length_penalty=lp)
            fns["compare_int8_with_attention"] = lambda: other_int8.translate(sentence, method=method, beam_size=beam, length_penalty=lp)
            other_src_len = len(other.source(sentence).ids)
            other_steps = len(other.translate(sentence, method=method, beam_size=beam, length_penalty=lp).candidates[0].ids)
            fns["compare_linear_floor"] = linear_floor(other.model, beam, other_steps, other_src_len)
            fns["output_projection"] = output_projection(model, beam, steps)
            fns["compare_output_projection"] = output_projection(other.model, beam, other_steps)
        for name, t in int8.items():
            fns[f"{name}_with_attention"] = (lambda t=t: t.translate(sentence, method=method, beam_size=beam, length_penalty=lp))
            if name == "int8":
                fns["int8_without_attention"] = lambda t=t: t.translate(sentence, method=method, beam_size=beam, length_penalty=lp,
                                                                        output_attentions=False)
        marian = marian_generate(model.config, src.size(1), steps, beam)
        if callable(marian):
            fns["marian_generate"] = marian
        with torch.inference_mode():
            times = interleaved(fns, args.repeats, {"seed_recompute_loop": args.seed_repeats})
        row: dict = {"output_tokens": steps, "narrow_model_output_tokens": narrow[1],
                     **{name: percentiles(t) for name, t in times.items()}}
        ours = row["ours_with_attention"]["p50_ms"]
        row["speedup_vs_seed"] = round(row["seed_recompute_loop"]["p50_ms"] / ours, 2)
        if "ours_with_search_recording" in row:
            recording = row["ours_with_search_recording"]["p50_ms"]
            row["search_recording_overhead_pct"] = round(100 * (recording / ours - 1), 1)
        if other is not None:
            compare_rows(row, other.translate(sentence, method=method, beam_size=beam, length_penalty=lp), ours)
        if callable(marian):
            row["speedup_vs_marian"] = round(row["marian_generate"]["p50_ms"] / ours, 2)
        else:
            row["marian_generate"] = marian
        int8_rows(row, list(int8), ours)
        row["int8_same_output"] = {name: t.translate(sentence, method=method, beam_size=beam, length_penalty=lp).text == r.text
                                   for name, t in int8.items()}
        results[method if beam == 1 else f"beam{beam}"] = row
    print(json.dumps(results))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, results)


if __name__ == "__main__":
    main()
