"""Training throughput: our Transformer vs PyTorch's `torch.nn.Transformer`, same configuration.

Both models get the same embeddings, positional encoding, output projection,
optimizer and batches (lengths drawn from Multi30k when the data is present,
else from a similar synthetic distribution); only the encoder–decoder core
differs. The two are timed in alternating rounds so load on the machine hits
both alike. Prints one JSON object.

    python bench/train_throughput.py --threads 2 --rounds 3 --steps 5

`--compare-bf16` times our model in float32 against the same model (same initial weights, same batches)
under `torch.autocast("cpu", dtype=torch.bfloat16)` instead, for CPUs with bf16 matrix units (AMX,
AVX-512 BF16: `lscpu | grep -o 'amx\\w*\\|avx512_bf16'`); `--en-de` uses the en-de configuration (16k
vocabulary, 6 encoder layers). It also reports each copy's mean training loss over the timed steps.

    python bench/train_throughput.py --compare-bf16 --en-de --threads 2 --rounds 4 --steps 4 --max-tokens 4096
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)
from transformer.config import ModelConfig  # noqa: E402
from transformer.training.data import collate  # noqa: E402
from transformer.model import PositionalEncoding, Transformer  # noqa: E402


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


def time_steps(model: nn.Module, batches: list, steps: int, offset: int, bf16: bool) -> tuple[float, int]:
    opt = model._bench_opt
    model.train()
    tokens, start = 0, time.perf_counter()
    model._bench_losses = getattr(model, "_bench_losses", [])
    for i in range(steps):
        b = batches[(offset + i) % len(batches)]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(b.src, b.tgt_in)
        loss = F.cross_entropy(logits.float().flatten(0, 1), b.tgt_out.flatten(), ignore_index=0, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        model._bench_losses.append(loss.item())
        tokens += b.n_tokens
    return time.perf_counter() - start, tokens


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="alternating timing rounds per model")
    p.add_argument("--steps", type=int, default=5, help="optimizer steps per round")
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for both models")
    p.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data/multi30k"))
    p.add_argument("--compare-bf16", action="store_true", help="ours in float32 against ours under bf16 autocast")
    p.add_argument("--en-de", action="store_true", help="the en-de configuration (16k vocabulary, 6+4 layers)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    vocab, n_enc = (16000, 6) if args.en_de else (8000, 4)
    cfg = ModelConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=256, n_heads=8, n_encoder_layers=n_enc,
                      n_decoder_layers=4, d_ff=1024, dropout=0.1, norm_first=args.norm_first)
    lengths, source = batch_lengths(4000, args.data_dir, seed=0)
    batches = make_batches(lengths, cfg.src_vocab_size, args.max_tokens, seed=0)
    if args.compare_bf16:
        ours = Transformer(cfg)
        models, bf16 = {"float32": ours, "bf16 autocast": copy.deepcopy(ours)}, {"float32": False, "bf16 autocast": True}
    else:
        models = {"ours": Transformer(cfg), "torch.nn.Transformer": TorchReference(cfg)}
        bf16 = dict.fromkeys(models, args.bf16)
    for name, m in models.items():
        m._bench_opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        time_steps(m, batches, 2, 0, bf16[name])  # warm-up
    rates: dict[str, list[float]] = {k: [] for k in models}
    for r in range(args.rounds):
        for name, m in models.items():
            seconds, tokens = time_steps(m, batches, args.steps, 2 + r * args.steps, bf16[name])
            rates[name].append(tokens / seconds)
    first, second = (statistics.median(rates[k]) for k in models)
    print(json.dumps({
        "cpu": cpu_model(), "threads": args.threads, "bf16": bf16, "norm_first": args.norm_first, "lengths": source,
        "max_tokens": args.max_tokens, "parameters": {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()},
        "tokens_per_s": {k: round(statistics.median(v)) for k, v in rates.items()},
        "ratio": round(first / second, 3), "rounds": args.rounds, "steps_per_round": args.steps,
        "mean_loss_timed_steps": {k: round(statistics.mean(m._bench_losses[2:]), 4) for k, m in models.items()},
    }))



if __name__ == "__main__":
    main()
