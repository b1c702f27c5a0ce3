"""Which search weights and int8 kernels serve fastest on this CPU, chosen by timing them on the model's shapes.

A CPU's flags do not say which kernel is fast: `torch._int_mm` runs oneDNN's int8 GEMM where oneDNN has one
for the CPU, and a scalar loop elsewhere (an AVX2-only AMD EPYC), while fbgemm's packed int8 linear has AVX2
code. So at start the app times, on one decoding step's linear layers (the model's own shapes, at the row counts
of one beam and of a batch), each way the search can compute them:

- int8 through `_int_mm`, and int8 through the packed linear (`quantize.RowInt8Linear`; the same bits either
  way, so each layer shape takes the faster kernel);
- float32 in fixed row blocks (`quantize.RowBlockLinear`).

It serves the faster precision, logs the timings behind the choice, and says plainly when even the best one is
slow. Every candidate is batch-invariant, so the choice moves speed only; int8 against float32 changes the search's
arithmetic, within the accuracy docs/model.md reports (the maps stay float32 either way).

    path = choose_serving_path(ModelConfig(...))     # ServingPath(precision="int8", kernels=..., ...)
    load_pretrained("checkpoints/en-de", quantize=path.precision, int8_kernels=path.kernels)
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from ..config import ModelConfig
from ..quantize import INT8_KERNELS, RowBlockLinear, RowInt8Linear, int8_available

log = logging.getLogger(__name__)

PROBE_ROWS = (5, 40)  # one sentence at beam 5, and a batch of eight at beam 5: the rows of one search step
PROBE_BUDGET_S = 1.5  # the whole probe; a kernel that has not finished its repeats by then is timed as it stands
REPEATS = 7  # timed calls per (layer, rows, path); the best is kept (the least disturbed by other work)
LOSER = 8.0  # a first call this many times slower than the fastest candidate so far is timed no further
# The probe's step time (5 + 40 rows) past which a lone beam-5 press takes about a second: the notice says so.
# Where the app meets its speed goals the probe measures a small fraction of it (docs/benchmarks.md).
SLOW_STEP_MS = 30.0


@dataclass(frozen=True)
class StepLinear:
    """One linear layer a decoding step runs `count` times (once per decoder layer, or once for the output)."""

    in_features: int
    out_features: int
    count: int


def step_linears(config: ModelConfig) -> list[StepLinear]:
    """The linear layers of one incremental decoding step (`quantize.search_model`'s decoder and output
    projection; the cross-attention keys and values are cached once per sentence, so they are not per step)."""
    d, n = config.d_model, config.n_decoder_layers
    ff_in = 2 * config.d_ff if config.activation == "geglu" else config.d_ff
    shapes = [(d, 3 * d), (d, d), (d, d), (d, d), (d, ff_in), (config.d_ff, d)]  # qkv, self out, cross q, cross out, FFN
    counts: dict[tuple[int, int], int] = {}
    for shape in shapes:
        counts[shape] = counts.get(shape, 0) + n
    counts[(d, config.tgt_vocab_size)] = counts.get((d, config.tgt_vocab_size), 0) + 1
    return [StepLinear(k, m, c) for (k, m), c in counts.items()]


@dataclass(frozen=True)
class ServingPath:
    """The chosen search weights ("int8" or "fp32"), the int8 kernel of each layer shape, and what was timed:
    `step_ms[path]` is one step's linears summed over the probe's row counts, `layer_ms[path][(in, out)]` each
    layer's time at those rows."""

    precision: str
    kernels: tuple[tuple[tuple[int, int], str], ...] = ()
    step_ms: dict[str, float] = field(default_factory=dict)
    layer_ms: dict[str, dict[tuple[int, int], float]] = field(default_factory=dict)
    probe_s: float = 0.0
    slow: bool = False
    reason: str = ""  # set where the precision was not measured (an override): `why` says it instead

    @property
    def why(self) -> str:
        """Why this precision, for the model notice: the two precisions' measured step times."""
        if self.reason:
            return self.reason
        other = "fp32" if self.precision == "int8" else "int8"
        against = f" against {self.step_ms[other]:.1f} ms in {other}" if other in self.step_ms else ""
        return f"measured fastest on this computer: {self.step_ms[self.precision]:.1f} ms a search step{against}"

    @property
    def details(self) -> str:
        """Every timing behind the choice and each layer shape's int8 kernel, for the log."""
        timed = ", ".join(f"{name} {ms:.2f} ms" for name, ms in sorted(self.step_ms.items(), key=lambda kv: kv[1]))
        kernels = ", ".join(f"{k}x{n}: {kernel}" for (k, n), kernel in self.kernels)
        return (f"{self.precision} (step linears at {'+'.join(map(str, PROBE_ROWS))} rows: {timed}"
                f"{'; int8 kernels ' + kernels if kernels else ''}; probe {self.probe_s:.2f} s)")

    @property
    def slow_note(self) -> str:
        """What the notice tells a user of a CPU on which even the fastest path is slow ('' where it is not)."""
        if not self.slow:
            return ""
        return ("This computer is slow for this model: even its fastest way to decode took "
                f"{self.step_ms[self.precision]:.0f} ms a step, so a translation takes a second or more, "
                "and longer at a wide beam.")


def best_ms(fn: Callable[[], object], deadline: float, repeats: int = REPEATS, beaten_by: float = float("inf")) -> float:
    """The fastest of `repeats` calls of `fn` in milliseconds, after one call that picks the kernel; fewer once
    `deadline` (time.perf_counter) has passed, and none more where the first timed call took over `LOSER` times
    `beaten_by` (ms, the fastest candidate so far): a kernel that far behind needs no precise time."""
    fn()
    start = time.perf_counter()
    fn()
    best = time.perf_counter() - start
    if best * 1e3 > LOSER * beaten_by:
        return best * 1e3
    for _ in range(repeats - 1):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        if start > deadline:
            break
    return best * 1e3


def candidate_layers(linear: nn.Linear) -> dict[str, nn.Module]:
    """Each way the search can compute `linear`, by name: "fp32" and, where torch has quantised kernels, one
    "int8:<kernel>" per kernel of `quantize.INT8_KERNELS`."""
    out: dict[str, nn.Module] = {"fp32": RowBlockLinear(linear)}
    if int8_available():
        for kernel in INT8_KERNELS:
            out[f"int8:{kernel}"] = RowInt8Linear(linear, kernel=kernel)
    return out


def time_layers(config: ModelConfig, budget_s: float = PROBE_BUDGET_S) -> dict[str, dict[tuple[int, int], float]]:
    """ms per candidate per layer shape: each step linear's best call time summed over `PROBE_ROWS`, times how
    often a step runs it. Random weights of the model's shapes (a kernel's speed does not depend on the values)."""
    deadline = time.perf_counter() + budget_s
    rng = torch.Generator().manual_seed(0)
    out: dict[str, dict[tuple[int, int], float]] = {}
    with torch.inference_mode():
        for layer in step_linears(config):
            linear = nn.Linear(layer.in_features, layer.out_features).eval()
            nn.init.normal_(linear.weight, std=layer.in_features ** -0.5, generator=rng)
            inputs = [torch.randn(rows, layer.in_features, generator=rng) for rows in PROBE_ROWS]
            fastest = [float("inf")] * len(inputs)  # per row count, the best candidate so far
            for name, module in candidate_layers(linear).items():  # float32 first: every shape has it
                times = [best_ms(lambda x=x: module(x), deadline, beaten_by=fastest[i]) for i, x in enumerate(inputs)]
                fastest = [min(a, b) for a, b in zip(fastest, times)]
                out.setdefault(name, {})[(layer.in_features, layer.out_features)] = sum(times) * layer.count
    return out


def fastest_int8_kernels(layer_ms: dict[str, dict[tuple[int, int], float]]) -> tuple[tuple[tuple[int, int], str], ...]:
    """Each layer shape's faster int8 kernel in `time_layers`' timings (() where no int8 kernel was timed)."""
    names = [name for name in layer_ms if name.startswith("int8:")]
    if not names:
        return ()
    return tuple((shape, min(names, key=lambda n: layer_ms[n][shape]).split(":", 1)[1]) for shape in layer_ms["fp32"])


def choose(layer_ms: dict[str, dict[tuple[int, int], float]], probe_s: float = 0.0) -> ServingPath:
    """The path from measured layer times (`time_layers`' form; tests pass their own): int8 with each shape's
    faster kernel, or float32, whichever step is faster."""
    step_ms = {"fp32": sum(layer_ms["fp32"].values())}
    kernels = fastest_int8_kernels(layer_ms)
    int8_names = [name for name in layer_ms if name.startswith("int8:")]
    if kernels:
        step_ms["int8"] = sum(layer_ms[f"int8:{kernel}"][shape] for shape, kernel in kernels)
        for name in int8_names:  # each kernel alone, for the log
            step_ms[name] = sum(layer_ms[name].values())
    precision = min(("int8", "fp32") if kernels else ("fp32",), key=lambda p: step_ms[p])
    return ServingPath(precision, kernels if precision == "int8" else (), step_ms,
                       layer_ms, probe_s, slow=step_ms[precision] > SLOW_STEP_MS)


def choose_serving_path(config: ModelConfig) -> ServingPath:
    """Time every candidate on `config`'s step linears (at most `PROBE_BUDGET_S` and a little) and choose; logged."""
    start = time.perf_counter()
    layer_ms = time_layers(config)
    path = choose(layer_ms, time.perf_counter() - start)
    log.info("serving path, measured on %d torch threads: %s", torch.get_num_threads(), path.details)
    if path.slow:
        log.warning("%s", path.slow_note)
    return path
