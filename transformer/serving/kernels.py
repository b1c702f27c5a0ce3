"""Which int8 kernel computes each of the search's layers fastest on this CPU, chosen by timing them on the
model's shapes.

The search has one arithmetic on every CPU: int8 weights and activations, integer sums, scaled in float32
(`quantize.RowInt8Linear`). Its kernels compute the same integer sums, so they give the same bits, and the
choice moves speed only. A CPU's flags do not say which is fast: `torch._int_mm` runs oneDNN's int8 GEMM where
oneDNN has one for the CPU, and a scalar loop elsewhere (an AVX2-only AMD EPYC); fbgemm's packed int8 linear
has AVX2 code; a float32 product of the same integers (exact, `quantize.EXACT_FLOAT_TERMS`) runs on the CPU's
float BLAS. So at start the app times, on one decoding step's linear layers (the model's own shapes, at the row
counts of one beam and of a batch), each kernel, serves each layer shape on its fastest, logs the timings behind
the choice, and says plainly when even the fastest is slow.

    path = choose_serving_path(ModelConfig(...))     # ServingPath(kernels=((256, 768), "packed"), ...), ...)
    quantize.use_int8_kernels(dict(path.kernels)); load_pretrained("checkpoints/en-de", quantize="int8")
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from ..config import ModelConfig
from ..quantize import INT8_KERNELS, RowInt8Linear, kernels_for

log = logging.getLogger(__name__)

PROBE_ROWS = (5, 40)  # one sentence at beam 5, and a batch of eight at beam 5: the rows of one search step
PROBE_BUDGET_S = 1.5  # the whole probe; a kernel that has not finished its repeats by then is timed as it stands
REPEATS = 7  # timed calls per (layer, rows, path); the best is kept (the least disturbed by other work)
LOSER = 8.0  # a first call this many times slower than the fastest candidate so far is timed no further
# The probe's step time (5 + 40 rows) past which a lone beam-5 press takes about a second: the notice says so.
# Where the app meets its speed goals the probe measures a small fraction of it (docs/benchmarks.md).
SLOW_STEP_MS = 30.0
# The float kernel must be this much faster than an integer one to serve a shape: timed alone it flattered itself
# under load (chosen for two shapes, it made beam 5 about 8 % slower in the search), and it holds its weights in
# float32, four times the bytes.
FLOAT_MARGIN = 0.15


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
    """The int8 kernel of each layer shape, and what was timed: `step_ms[name]` is one step's linears summed over
    the probe's row counts ("int8": each shape on its chosen kernel; "int8:<kernel>": every shape on that one),
    `layer_ms["int8:<kernel>"][(in, out)]` each layer's time at those rows. `precision` is always "int8", the one
    arithmetic of the search."""

    precision: str = "int8"
    kernels: tuple[tuple[tuple[int, int], str], ...] = ()
    step_ms: dict[str, float] = field(default_factory=dict)
    layer_ms: dict[str, dict[tuple[int, int], float]] = field(default_factory=dict)
    probe_s: float = 0.0
    slow: bool = False
    reason: str = ""  # set where the kernels were not measured (an override): `why` says it instead

    @property
    def why(self) -> str:
        """Why these kernels, for the model notice: the measured step time."""
        if self.reason:
            return self.reason
        return f"kernels measured fastest on this computer: {self.step_ms['int8']:.1f} ms a search step"

    @property
    def details(self) -> str:
        """Every timing behind the choice and each layer shape's int8 kernel, for the log."""
        timed = ", ".join(f"{name} {ms:.2f} ms" for name, ms in sorted(self.step_ms.items(), key=lambda kv: kv[1]))
        kernels = ", ".join(f"{k}x{n}: {kernel}" for (k, n), kernel in self.kernels)
        return (f"int8 (step linears at {'+'.join(map(str, PROBE_ROWS))} rows: {timed}"
                f"{'; int8 kernels ' + kernels if kernels else ''}; probe {self.probe_s:.2f} s)")

    @property
    def slow_note(self) -> str:
        """What the notice tells a user of a CPU on which even the fastest path is slow ('' where it is not)."""
        if not self.slow:
            return ""
        return ("This computer is slow for this model: even its fastest way to decode took "
                f"{self.step_ms['int8']:.0f} ms a step, so a translation takes a second or more, "
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
    """Each way the search can compute `linear`, by name: "int8:<kernel>" for every kernel of
    `quantize.INT8_KERNELS` this torch build has for its shape (the same bits each)."""
    return {f"int8:{kernel}": RowInt8Linear(linear, kernel=kernel)
            for kernel in INT8_KERNELS if kernel in kernels_for(linear.in_features)}


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
            for name, module in candidate_layers(linear).items():
                times = [best_ms(lambda x=x: module(x), deadline, beaten_by=fastest[i]) for i, x in enumerate(inputs)]
                fastest = [min(a, b) for a, b in zip(fastest, times)]
                out.setdefault(name, {})[(layer.in_features, layer.out_features)] = sum(times) * layer.count
    return out


def fastest_int8_kernels(layer_ms: dict[str, dict[tuple[int, int], float]]) -> tuple[tuple[tuple[int, int], str], ...]:
    """Each layer shape's fastest int8 kernel in `time_layers`' timings; the float kernel only where it beats the
    fastest integer kernel by `FLOAT_MARGIN`."""
    shapes = list(dict.fromkeys(shape for per_shape in layer_ms.values() for shape in per_shape))
    timed = [name for name in layer_ms if name.startswith("int8:")]

    def cost(name: str, shape: tuple[int, int]) -> float:
        return layer_ms[name][shape] / (1 - FLOAT_MARGIN if name == "int8:float" else 1)

    return tuple((shape, min((n for n in timed if shape in layer_ms[n]), key=lambda n: cost(n, shape))
                  .split(":", 1)[1]) for shape in shapes)


def choose(layer_ms: dict[str, dict[tuple[int, int], float]], probe_s: float = 0.0) -> ServingPath:
    """The path from measured layer times (`time_layers`' form; tests pass their own): each shape on its fastest
    kernel."""
    kernels = fastest_int8_kernels(layer_ms)
    step_ms = {"int8": sum(layer_ms[f"int8:{kernel}"][shape] for shape, kernel in kernels)}
    for name, per_shape in layer_ms.items():  # each kernel alone, for the log
        if len(per_shape) == len(kernels):
            step_ms[name] = sum(per_shape.values())
    return ServingPath("int8", kernels, step_ms, layer_ms, probe_s, slow=step_ms["int8"] > SLOW_STEP_MS)


def choose_serving_path(config: ModelConfig) -> ServingPath:
    """Time every candidate on `config`'s step linears (at most `PROBE_BUDGET_S` and a little) and choose; logged."""
    start = time.perf_counter()
    layer_ms = time_layers(config)
    path = choose(layer_ms, time.perf_counter() - start)
    log.info("serving path, measured on %d torch threads: %s", torch.get_num_threads(), path.details)
    if path.slow:
        log.warning("%s", path.slow_note)
    return path
