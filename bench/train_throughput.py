"""Training throughput: the trainer as it was at a reference commit against the trainer now.

Same machine, one run, same initial weights, same batches. Each path is timed in alternating rounds so load
on the machine hits all alike. Paths:

- `ref fp32`, `ref bf16`: the reference commit's model code (`git show COMMIT:transformer/model.py`, so its
  dropout and attention) with its loss (float32 logits of every position, `F.cross_entropy`) and its
  optimizer (AdamW, not fused), in float32 and under bf16 autocast;
- `now (fp32)`, `now (bf16)`: `trainer.batch_loss` and `trainer.make_optimizer` as the trainer runs them, in
  float32 and under bf16 autocast; `chosen` names the one the trainer picks on this machine (`hardware.py`),
  and the ratios are that path's;
- on a GPU also `now (bf16, CUDA graphs)`, the trainer's choice there (`cuda_graphs.py`): each step pads its
  batch on the host, copies it in and replays the graph of its shape. Every shape the timed steps use is
  recorded before the timing (`record_s`: what that took). `replay_only_tokens_per_s` times the same steps
  with the host's part left out (no padding or copying, the graphs replayed on the inputs already there): the
  GPU's own pace. Its MFU counts the model's FLOPs per real token, not the padding's.

Every step also clips the gradient norm, as the trainer does. On a CPU each trainer runs with the heap it
sets (`--heap as-run`, the default): the trainer now keeps freed blocks (`transformer/heap.py`), the trainer at
b000f29 left glibc's heap as it starts, so the reference paths run in a child process of their own, their
rounds alternating with the parent's as before. `--heap keep` or `--heap default` runs every path in one
process with that heap instead. Cases: `en-de-16k` is the architecture en-de
had before its from-scratch recipe (16k vocabulary, 6+4 layers, dropout at every site); `--preset NAME` adds
the architecture of a training preset, with its dropout sites on the `now` path (the reference commit's model
has dropout at every site).

Utilisation (MFU, as nanoGPT reports it): the matmul FLOPs of a step, counted by `torch.utils.flop_counter`
on the step itself (forward and backward), times steps per second, divided by this machine's GEMM peak in
the step's dtype: the fastest (4096x512 by 512x2048) matrix multiplication seen in the same run, timed before
every round. Prints one JSON object.

    python bench/train_throughput.py --threads 2 --rounds 3 --steps 4 --max-tokens 4096 --preset en-de

`--vs-torch` times our model against `torch.nn.Transformer` with the same embeddings and batches instead.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import fields, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)
from transformer import heap  # noqa: E402
from transformer.config import ModelConfig  # noqa: E402
from transformer.model import PositionalEncoding, Transformer  # noqa: E402
from transformer.training import hardware  # noqa: E402
from transformer.training.config import PRESETS, TrainConfig  # noqa: E402
from transformer.training.cuda_graphs import GraphedSteps, padded_shape  # noqa: E402
from transformer.training.data import collate  # noqa: E402
from transformer.training.trainer import batch_loss, make_optimizer  # noqa: E402

REFERENCE_COMMIT = "b000f29"  # the trainer before the fast path
EN_DE_16K = dict(d_model=256, n_heads=8, n_encoder_layers=6, n_decoder_layers=4, d_ff=1024, dropout=0.1, vocab=16000)


def reference_model_class(commit: str, source: Path | None = None) -> type[nn.Module]:
    """`Transformer` as `transformer/model.py` was at `commit` (with its config.py and kv_cache.py), read with
    `git show`, or from the directory `source` that holds those three files (a copy of the working tree without
    its git history, as on a GPU machine)."""
    pkg = Path(tempfile.mkdtemp()) / f"transformer_at_{commit}"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("config.py", "kv_cache.py", "model.py"):
        text = (source / name).read_text() if source else subprocess.run(
            ["git", "show", f"{commit}:transformer/{name}"], cwd=REPO, check=True, capture_output=True, text=True).stdout
        (pkg / name).write_text(text)
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module(f"{pkg.name}.model").Transformer


class TorchReference(nn.Module):
    """`nn.Transformer` wrapped with the same embedding / positional / output layers as ours."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.positional = PositionalEncoding(cfg.d_model, cfg.max_len)
        self.dropout = nn.Dropout(cfg.dropout)
        self.core = nn.Transformer(
            d_model=cfg.d_model, nhead=cfg.n_heads, num_encoder_layers=cfg.n_encoder_layers,
            num_decoder_layers=cfg.n_decoder_layers, dim_feedforward=cfg.d_ff, dropout=cfg.dropout,
            activation=cfg.activation, batch_first=True, norm_first=cfg.norm_first,
        )
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)
        self.generator.weight = self.embed.weight

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        scale = math.sqrt(self.cfg.d_model)
        s = self.dropout(self.positional(self.embed(src) * scale))
        t = self.dropout(self.positional(self.embed(tgt_in) * scale))
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), dtype=torch.bool)
        h = self.core(s, t, tgt_mask=causal, src_key_padding_mask=src == self.cfg.pad_id,
                      tgt_key_padding_mask=tgt_in == self.cfg.pad_id, memory_key_padding_mask=src == self.cfg.pad_id,
                      tgt_is_causal=True)
        return self.generator(h)


def batch_lengths(n: int, data_dir: Path, seed: int) -> tuple[list[tuple[int, int]], str]:
    """(source, target) lengths in tokens: Multi30k words x 1.25 (BPE pieces) if present, else synthetic."""
    rng = random.Random(seed)
    try:
        import gzip

        with gzip.open(data_dir / "train.en.gz", "rt") as fe, gzip.open(data_dir / "train.de.gz", "rt") as fd:
            pairs = [(len(e.split()), len(d.split())) for e, d in zip(fe, fd)]
        sample = rng.sample(pairs, n)
        return [(max(1, round(a * 1.25)), max(1, round(b * 1.25))) for a, b in sample], "multi30k lengths"
    except OSError:
        return [(max(2, int(rng.gauss(15, 4))), max(2, int(rng.gauss(16, 4)))) for _ in range(n)], "synthetic lengths"


def make_batches(lengths, vocab: int, max_tokens: int, seed: int) -> list:
    """Host batches of random ids with the given lengths, cut as the trainer cuts them (token budget), shuffled."""
    rng = random.Random(seed)
    lengths = sorted(lengths, key=lambda x: x[1])
    batches, current = [], []
    for s, t in lengths:
        if current and max(max(x) for x in current + [(s, t)]) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current = []
        current.append((s, t))
    batches.append(current)
    rng.shuffle(batches)
    out = []
    for group in batches:
        pairs = [([rng.randrange(4, vocab) for _ in range(s)], [rng.randrange(4, vocab) for _ in range(t)]) for s, t in group]
        out.append(collate(pairs, 0, 2, 3))
    return out


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a GPU runs behind the host; a CPU does not)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def gemm_peak(dtype: torch.dtype, repeats: int = 5, device: torch.device = torch.device("cpu")) -> float:
    """FLOP/s of one (4096 x 512) @ (512 x 2048) matrix multiplication in `dtype` on a CPU, (8192 x 8192) @
    (8192 x 8192) on a GPU (the small one is far from a GPU's peak), best of `repeats`."""
    m, k, n = (8192, 8192, 8192) if device.type == "cuda" else (4096, 512, 2048)
    a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)
    a @ b
    best = math.inf
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * m * k * n / best


class Path_:
    """One training path: a model, its optimizer, and how a step computes the loss."""

    host_batches = False  # steps take batches already on the device

    def __init__(self, name: str, model: nn.Module, optimizer: torch.optim.Optimizer, loss, bf16: bool):
        self.name, self.model, self.optimizer, self.loss, self.bf16 = name, model, optimizer, loss, bf16
        self.losses: list[float] = []
        self.rates: list[float] = []
        self.flops_per_token = 0.0

    def step(self, batch) -> torch.Tensor:
        """One optimizer step; the mean loss per target token, left on the device (read after the timing)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(self.model, batch)
        (loss / batch.n_tokens).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss.detach() / batch.n_tokens

    def count_flops(self, batches) -> None:
        """Matmul FLOPs per target token over a few batches (forward + backward + optimizer)."""
        counter = FlopCounterMode(display=False)
        with counter:
            for b in batches:
                self.step(b)
        self.flops_per_token = counter.get_total_flops() / sum(b.n_tokens for b in batches)


class GraphPath(Path_):
    """The trainer's step on one GPU: host batches padded and replayed as CUDA graphs (`cuda_graphs.py`)."""

    host_batches = True

    def __init__(self, name: str, model: nn.Module, optimizer: torch.optim.Optimizer, bf16: bool):
        super().__init__(name, model, optimizer, None, bf16)
        self.steps = GraphedSteps(model, lambda m, b: batch_loss(m, b, 0.1, bf16, True, static_shape=True))
        self.replay_rates: list[float] = []

    def step(self, batch) -> torch.Tensor:
        self.steps.zero_grad()
        loss = self.steps.accumulate(batch)
        return self._update(loss, batch.n_tokens)

    def replay_only(self, batch) -> torch.Tensor:
        """The same step without the host's part: the graph of the batch's shape on the inputs already copied."""
        self.steps.zero_grad()
        self.steps.shapes[padded_shape(batch, self.model.config.max_len)].graph.replay()
        return self._update(self.steps.loss_out.clone(), batch.n_tokens)

    def _update(self, loss: torch.Tensor, n_tokens: int) -> torch.Tensor:
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss / n_tokens

    def count_flops(self, batches) -> None:
        """Recorded graphs replay outside the FLOP counter's sight: the count is taken from the eager path."""


class ReferenceProcess:
    """The reference paths in a child process (glibc's heap as it starts, as the trainer at b000f29 ran): the
    child builds the same batches and weights, and runs a round of its paths when the parent asks."""

    def __init__(self, spec: dict):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: none of the parent's mallopt settings
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=reference_worker, args=(child, spec), daemon=True)
        self.process.start()
        self.paths = [RemotePath(name, bf16, flops) for name, bf16, flops in self.conn.recv()]

    def run_round(self, r: int) -> None:
        self.conn.send(r)
        for path, (rate, losses) in zip(self.paths, self.conn.recv()):
            path.rates.append(rate)
            path.losses += losses

    def close(self) -> None:
        self.conn.send(None)
        self.process.join(timeout=60)


class RemotePath:
    """What the parent knows of a path the child runs: its results."""

    def __init__(self, name: str, bf16: bool, flops_per_token: float):
        self.name, self.bf16, self.flops_per_token = name, bf16, flops_per_token
        self.rates: list[float] = []
        self.losses: list[float] = []


def reference_worker(conn, spec: dict) -> None:
    """The child of `ReferenceProcess`: warm up and count FLOPs, then time a round of its paths per request."""
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    reference_cls = reference_model_class(spec["commit"], spec["source"])
    cfg = ModelConfig(**spec["config"])
    batches = make_batches(spec["lengths"], cfg.src_vocab_size, spec["max_tokens"], seed=0)
    paths = reference_paths(cfg, reference_cls, torch.load(spec["weights"]), spec["commit"], torch.device("cpu"))
    for p in paths:
        p.model.train()
        for b in batches[:2]:
            p.step(b)
        p.count_flops(batches[2:4])
    conn.send([(p.name, p.bf16, p.flops_per_token) for p in paths])
    while (r := conn.recv()) is not None:
        chunk = [batches[i] for i in spec["timed"][r]]
        results = []
        for p in paths:
            tokens, start = sum(b.n_tokens for b in chunk), time.perf_counter()
            losses = [p.step(b) for b in chunk]
            results.append((tokens / (time.perf_counter() - start), torch.stack(losses).tolist()))
        conn.send(results)


def reference_loss(bf16: bool):
    def loss(model, b):
        with torch.autocast(b.src.device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(b.src, b.tgt_in).logits
        return F.cross_entropy(logits.float().flatten(0, 1), b.tgt_out.flatten(), ignore_index=0,
                               label_smoothing=0.1, reduction="sum")
    return loss


def reference_paths(cfg: ModelConfig, reference_cls, weights: dict, commit: str, device: torch.device) -> list[Path_]:
    """The reference commit's model, loss and optimizer, in float32 and under bf16 autocast, from `weights`."""
    train_cfg = TrainConfig(lr=1e-4, weight_decay=0.0)
    paths = []
    for precision in ("fp32", "bf16"):
        ref = reference_cls(replace_config(cfg, reference_cls)).to(device)
        ref.load_state_dict(weights)
        opt = make_optimizer(ref, replace(train_cfg, fused=False))
        paths.append(Path_(f"{commit} {precision}", ref, opt, reference_loss(precision == "bf16"), precision == "bf16"))
    return paths


def now_paths(cfg: ModelConfig, weights: dict, bf16_now: bool, device: torch.device) -> list[Path_]:
    """The trainer now, in float32 and bf16 (its choice last: the ratios are its), and on a GPU its CUDA graphs."""
    train_cfg = TrainConfig(lr=1e-4, weight_decay=0.0)
    paths = []
    for bf16 in (False, True):
        model = Transformer(cfg).to(device)
        model.load_state_dict(weights)
        paths.append(Path_(f"now ({'bf16' if bf16 else 'fp32'})", model, make_optimizer(model, train_cfg),
                           lambda m, b, bf16=bf16: batch_loss(m, b, 0.1, bf16, True), bf16))
    if not bf16_now:
        paths[-2], paths[-1] = paths[-1], paths[-2]
    if device.type == "cuda":  # there the trainer records its steps as CUDA graphs
        model = Transformer(cfg).to(device)
        model.load_state_dict(weights)
        paths.append(GraphPath("now (bf16, CUDA graphs)", model, make_optimizer(model, train_cfg), True))
    return paths


def replace_config(cfg: ModelConfig, reference_cls):
    """Our config as the reference commit's `ModelConfig` (the same fields)."""
    module = sys.modules[reference_cls.__module__.rsplit(".", 1)[0] + ".config"]
    known = {f.name for f in fields(module.ModelConfig)}  # fields added since (dropout sites) keep its defaults
    return module.ModelConfig(**{k: v for k, v in cfg.to_dict().items() if k in known})


def run_case(name: str, cfg: ModelConfig, host: list, args, reference_cls, bf16_now: bool, peaks: dict) -> dict:
    torch.manual_seed(0)
    device = torch.device(args.device)
    on_device = [b.to(device) for b in host]
    start_model = Transformer(cfg)
    weights = start_model.state_dict()  # every path starts from these
    timed = [[(4 + r * args.steps + i) % len(host) for i in range(args.steps)] for r in range(args.rounds)]
    child = None
    if args.heap == "as-run" and device.type == "cpu":
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(weights, Path(tmp) / "weights.pt")
            child = ReferenceProcess(dict(
                threads=args.threads, commit=args.commit, source=args.reference_source, config=cfg.to_dict(),
                lengths=args.lengths, max_tokens=args.max_tokens, weights=Path(tmp) / "weights.pt", timed=timed))
        local = now_paths(cfg, weights, bf16_now, device)
        paths = child.paths + local
    else:
        local = paths = reference_paths(cfg, reference_cls, weights, args.commit, device) + now_paths(
            cfg, weights, bf16_now, device)
    for p in local:
        batches = host if p.host_batches else on_device
        p.model.train()
        for b in batches[:2]:  # warm-up
            p.step(b)
        p.count_flops(batches[2:4])
        if isinstance(p, GraphPath):  # record every shape the timed steps use, and say what that took
            for i in sorted({i for chunk in timed for i in chunk}):
                p.step(batches[i])
            sync(device)
    for r in range(args.rounds):
        for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):  # the peak: best seen in the run
            peaks[name] = max(peaks[name], gemm_peak(dtype, repeats=3, device=device))
        if child:
            child.run_round(r)
        for p in local:
            chunk = [(host if p.host_batches else on_device)[i] for i in timed[r]]
            sync(device)
            tokens, start = sum(b.n_tokens for b in chunk), time.perf_counter()
            losses = [p.step(b) for b in chunk]
            sync(device)
            p.rates.append(tokens / (time.perf_counter() - start))
            p.losses += torch.stack(losses).tolist()
            if isinstance(p, GraphPath):
                start = time.perf_counter()
                for b in chunk:
                    p.replay_only(b)
                sync(device)
                p.replay_rates.append(tokens / (time.perf_counter() - start))
    if child:
        child.close()
    eager = {p.name: p for p in paths}
    first = paths[0]
    out = {"parameters": sum(t.numel() for t in start_model.parameters()), "vocab": cfg.src_vocab_size,
           "layers": [cfg.n_encoder_layers, cfg.n_decoder_layers], "d_model": cfg.d_model, "d_ff": cfg.d_ff}
    for p in paths:
        if isinstance(p, GraphPath):
            p.flops_per_token = eager["now (bf16)"].flops_per_token  # the model's FLOPs per real target token
        rate = statistics.median(p.rates)
        out[p.name] = {
            "tokens_per_s": round(rate), "rounds": [round(x) for x in p.rates], "dtype": "bf16" if p.bf16 else "fp32",
            "matmul_gflop_per_token": round(p.flops_per_token / 1e9, 4),
            "mean_loss_timed_steps": round(statistics.mean(p.losses), 4),
        }
        if isinstance(p, GraphPath):
            out[p.name] |= {"replay_only_tokens_per_s": round(statistics.median(p.replay_rates)),
                            "replay_only_rounds": [round(x) for x in p.replay_rates], "shapes": len(p.steps.shapes),
                            "record_s": round(p.steps.record_seconds, 2)}
    out["chosen"] = paths[-1].name
    for p in paths[1:]:
        out[f"ratio {p.name} / {first.name}"] = round(out[p.name]["tokens_per_s"] / out[first.name]["tokens_per_s"], 3)
    now, ref_bf16 = paths[-1], paths[1]
    out[f"ratio {now.name} / {ref_bf16.name}"] = round(
        out[now.name]["tokens_per_s"] / out[ref_bf16.name]["tokens_per_s"], 3)
    return out


def vs_torch(args, batches) -> dict:
    """Our model against torch.nn.Transformer, same configuration, batches and precision."""
    cfg = ModelConfig(src_vocab_size=8000, tgt_vocab_size=8000)
    models = {"ours": Transformer(cfg), "torch.nn.Transformer": TorchReference(cfg)}
    paths = [Path_(k, m, torch.optim.AdamW(m.parameters(), lr=1e-4), reference_loss(False), False)
             for k, m in models.items()]
    for p in paths:
        p.model.train()
        p.step(batches[0])
    for r in range(args.rounds):
        chunk = [batches[(1 + r * args.steps + i) % len(batches)] for i in range(args.steps)]
        for p in paths:
            start = time.perf_counter()
            for b in chunk:
                p.step(b)
            p.rates.append(sum(b.n_tokens for b in chunk) / (time.perf_counter() - start))
    rates = {p.name: round(statistics.median(p.rates)) for p in paths}
    return {"tokens_per_s": rates, "ratio": round(rates["ours"] / rates["torch.nn.Transformer"], 3)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="alternating timing rounds per path")
    p.add_argument("--steps", type=int, default=4, help="optimizer steps per round")
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--commit", default=REFERENCE_COMMIT, help="the reference trainer's commit")
    p.add_argument("--reference-source", type=Path,
                   help="a directory with the reference commit's config.py, kv_cache.py and model.py (no git history)")
    p.add_argument("--preset", action="append", default=[], help="also time this training preset's architecture")
    p.add_argument("--data-dir", type=Path, default=REPO.parent / "shared/data/multi30k")
    p.add_argument("--vs-torch", action="store_true", help="ours against torch.nn.Transformer instead")
    p.add_argument("--json", type=Path, help="also write the result here")
    p.add_argument("--device", default="cpu", help="cpu, or cuda: every path on the GPU (--heap keep, a CPU trainer's "
                                                   "setting, is then skipped)")
    p.add_argument("--heap", choices=("as-run", "keep", "default"), default="as-run",
                   help="on a CPU, glibc's heap as each trainer sets it: the trainer now keeps freed blocks "
                        "(transformer/heap.py), the reference paths run in a child process with the heap as glibc starts "
                        "it (as-run); or every path in one process with the trainer's heap (keep) or glibc's (default)")
    args = p.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    if args.heap in ("as-run", "keep") and device.type == "cpu":
        heap.keep()
    torch.manual_seed(0)
    lengths, source = batch_lengths(4000, args.data_dir, seed=0)
    args.lengths = lengths  # a reference process builds the same batches from them
    result = {"cpu": cpu_model(), "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "threads": args.threads,
              "lengths": source, "max_tokens": args.max_tokens, "rounds": args.rounds, "steps_per_round": args.steps,
              "heap": args.heap}
    if args.vs_torch:
        result["vs_torch"] = vs_torch(args, make_batches(lengths, 8000, args.max_tokens, seed=0))
    else:
        hw = hardware.detect(device)
        bf16_now = hardware.use_bf16("auto", hw)
        result["hardware"] = hw.kind
        result["bf16_gemm_speedup"] = None if hw.bf16_speedup is None else round(hw.bf16_speedup, 2)
        peaks = {"fp32": gemm_peak(torch.float32, device=device), "bf16": gemm_peak(torch.bfloat16, device=device)}
        reference_cls = reference_model_class(args.commit, args.reference_source)
        cases = {"en-de-16k": dict(EN_DE_16K)}
        for name in args.preset:
            pr = PRESETS[name]
            keys = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "dropout",
                    "attention_dropout", "activation_dropout")
            cases[name] = {k: pr[k] for k in keys if k in pr} | {"vocab": pr["vocab_size"] + pr.get("placeholders", 0)}
        for name, c in cases.items():
            vocab = c.pop("vocab")
            cfg = ModelConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, **c)
            batches = make_batches(lengths, vocab, args.max_tokens, seed=0)
            result[name] = run_case(name, cfg, batches, args, reference_cls, bf16_now, peaks)
        result["gemm_peak_tflops"] = {k: round(v / 1e12, 3) for k, v in peaks.items()}
        for name in cases:  # MFU against the best peak of the whole run
            for row in result[name].values():
                if isinstance(row, dict) and "dtype" in row:
                    row["mfu"] = round(row["tokens_per_s"] * row["matmul_gflop_per_token"] * 1e9 / peaks[row["dtype"]], 3)
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
