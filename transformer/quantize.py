"""The search's int8 copy of the decoder: one arithmetic on every CPU, batch-invariant (a sentence's search
computes the same bits whatever else is decoded beside it), on whichever kernel is fastest here.

    from transformer import load_pretrained
    tr = load_pretrained("checkpoints/en-de", quantize="int8")   # tr.precision == "int8": what the app serves
    serving.kernels.choose_serving_path(config)                  # which kernel this CPU runs fastest, per layer

At beam 5 a decoding step reads every decoder and output weight for a handful of rows, so it is bound by
memory traffic: int8 weights (a quarter of the bytes) make the search faster. What stays float32, and
why: the encoder and the embeddings (shared with the float32 model, not copied; the encoder runs once per
sentence) and the attention capture. Attention maps computed through int8 weights drift from the float32
ones by more than the 0.02 (max abs) the app allows (`bench/int8_accuracy.py`), so `Translator` draws
every map (and the step probabilities) with one teacher-forced float32 pass over the hypothesis the int8
search found: the maps are exactly the float32 model's maps of that output.

Batch invariance. PyTorch's dynamic quantisation (`quantize_dynamic`) quantises a call's activations with
one scale for the whole batch, so a sentence's translation depended on the other sentences of its batch.
`RowInt8Linear` quantises each row with its own scale (7 bits, [-63, 63] times max|row| / 63) and
multiplies in int8 with int32 accumulation, which is exact: the integer sums do not depend on how a kernel
blocks the rows, and the float scaling after it is elementwise. It runs on torch's own quantised kernels
(fbgemm/oneDNN, `quantized.linear_dynamic`), which choose their activation scale from the batch's min and
max: an extra row holding -64 and 63 fixes that scale at exactly 1, so the integers pass through unchanged.
Exact on every kernel: `RowInt8Linear`'s three kernels form the same integer sums (module
`RowInt8Linear`, docs/serving.md "One arithmetic on every computer"). The float32 search ("fp32", the library's
default, not served by the app) is another arithmetic. Float32 matrix products are not batch-invariant on CPU (MKL picks other kernels for other row counts, e.g.
a gemv for one row, and splits long reductions over threads differently): `RowBlockLinear` (the float32
search) multiplies in blocks of `ROW_BLOCK` rows, one call per block, so every row sees the same call shape
whatever the batch; the tests check on each machine that this holds.
"""
from __future__ import annotations

import copy
import functools
import logging
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .model import DecoderLayer, MultiHeadAttention, Transformer

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "int8")
ENGINES = ("x86", "fbgemm", "onednn", "qnnpack")  # torch's quantised CPU kernels, one of them is enough
ROW_BLOCK = 16  # rows per float32 matrix product in the search: one call shape, whatever the batch
_ACTIVATION_LEVELS = 63  # a row is quantised to [-63, 63]: 7 bits, as fbgemm's reduce_range expects
_WEIGHT_LEVELS = 127  # a weight is quantised to [-127, 127], one scale per output channel
# The most terms a float32 sum of int8 products holds exactly: every partial sum stays below 2^24, where float32
# still represents every integer, so any summation order (any BLAS kernel, blocking or thread split) is exact.
EXACT_FLOAT_TERMS = 2**24 // (_ACTIVATION_LEVELS * _WEIGHT_LEVELS)  # 2097
INT_MM_MAX_OUT = 4096  # RowInt8Linear's default: `_int_mm` up to this many outputs, wider ones the packed linear
# RowInt8Linear's kernels, the same bits: `serving.kernels` times them and serves the fastest for each layer shape
INT8_KERNELS = ("int_mm", "packed", "float")


def int8_available() -> bool:
    """Whether this torch build has a quantised CPU engine (x86 and ARM builds do): the "packed" kernel needs one."""
    return any(engine in torch.backends.quantized.supported_engines for engine in ENGINES)


def kernels_for(in_features: int) -> tuple[str, ...]:
    """The kernels of `INT8_KERNELS` that can compute a layer of `in_features` inputs on this torch build."""
    out = ["int_mm"]
    if int8_available():
        out.append("packed")
    if in_features <= EXACT_FLOAT_TERMS:
        out.append("float")
    return tuple(out)


def weight_integers(weight: Tensor) -> tuple[Tensor, Tensor]:
    """`weight` (N, K) float32 as integers in [-127, 127] (int8) and one float32 scale per output channel (N,).
    Each step is one correctly rounded float32 operation, so every CPU gets the same integers (these are the
    integers `torch.quantize_per_channel` gave the shipped models: it multiplies by the scale's inverse)."""
    scales = (weight.abs().amax(1) / _WEIGHT_LEVELS).clamp_min(1e-12)  # (N,)
    inverse = torch.reciprocal(scales)  # (N,)
    integers = torch.mul(weight, inverse[:, None]).round_().clamp_(-_WEIGHT_LEVELS, _WEIGHT_LEVELS)  # (N, K)
    return integers.to(torch.int8), scales


class RowInt8Linear(nn.Module):
    """`nn.Linear` with int8 weights (one scale per output channel) and int8 activations (one scale per
    row): each output row depends on its input row alone, bit for bit (module doc).

    Three kernels compute the same integer sums (`kernel`), so they give the same bits: torch's `_int_mm`
    ("int_mm": int8 x int8 -> int32), fbgemm/oneDNN's packed dynamic linear ("packed": int32 sums inside, scaled
    by the weight's scale) and a float32 matrix product of the same integers ("float": exact, `EXACT_FLOAT_TERMS`).
    Each then scales as float32(sum) * weight scale, * row scale, + bias: one correctly rounded operation at a
    time, never fused, so no CPU's choice of instructions changes a bit. Which kernel is fastest depends on the
    CPU and the shape (`serving.kernels` times them); without a choice, `_int_mm` serves layers of at most
    `INT_MM_MAX_OUT` outputs and wider ones the packed linear (or the float product where torch has no engine)."""

    def __init__(self, linear: nn.Linear, kernel: str | None = None):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        available = kernels_for(self.in_features)
        if kernel is None:
            kernel = "int_mm" if self.out_features <= INT_MM_MAX_OUT else next(k for k in ("packed", "float", "int_mm")
                                                                             if k in available)
        if kernel not in available:
            raise ValueError(f"kernel must be one of {available} for {self.in_features} inputs, got {kernel!r}")
        self.kernel = kernel
        integers, scales = weight_integers(linear.weight.detach().float())  # (N, K) int8, (N,)
        self._weight_scale = scales
        if kernel == "int_mm":
            self._weight_t = integers.t().contiguous()  # (K, N) int8
        elif kernel == "float":
            self._weight_t = integers.t().float().contiguous()  # (K, N) float32 holding the same integers
        else:
            zero = torch.zeros(self.out_features, dtype=torch.long)
            with warnings.catch_warnings():  # quantized tensors announce their deprecation on every call
                warnings.simplefilter("ignore")
                qweight = torch._make_per_channel_quantized_tensor(integers, scales.double(), zero, 0)
                self._packed = torch.ops.quantized.linear_prepack(qweight, None)
            self._scale_row = torch.zeros(1, self.in_features)  # fixes the dynamic kernel's activation scale at 1
            self._scale_row[0, :2] = torch.tensor([-1.0 - _ACTIVATION_LEVELS, float(_ACTIVATION_LEVELS)])
        # Plain attributes, not buffers: a search step reads them some 25 times, and a module's buffers are found
        # through its slow `__getattr__`. The search model stays on the CPU, and nobody saves its state dict.
        self.bias = linear.bias.detach().float().clone() if linear.bias is not None else None

    def forward(self, x: Tensor) -> Tensor:
        """x (..., K) float32 -> (..., N) float32."""
        rows = x.reshape(-1, self.in_features)  # (M, K)
        scale = rows.abs().amax(1, keepdim=True).clamp_min_(1e-30).div_(_ACTIVATION_LEVELS)  # (M, 1)
        q = torch.div(rows, scale).round_()  # (M, K) integers in [-63, 63]
        if self.kernel == "int_mm":
            out = torch._int_mm(q.to(torch.int8), self._weight_t) * self._weight_scale  # (M, N): w_scale * int sum
        elif self.kernel == "float":
            out = torch.mm(q, self._weight_t).mul_(self._weight_scale)  # (M, N): exact integer sums, then w_scale
        else:  # the extra row pins the kernel's activation scale; its output row is dropped
            out = torch.ops.quantized.linear_dynamic(torch.cat([q, self._scale_row]), self._packed, True)[: q.size(0)]
        out = out.mul_(scale) if self.bias is None else out.mul_(scale).add_(self.bias)  # two roundings, not an FMA
        return out.view(*x.shape[:-1], self.out_features)


class RowBlockLinear(nn.Module):
    """`nn.Linear` (sharing its parameters) computed `ROW_BLOCK` rows per call, the last block padded with
    zeros: every row goes through the same float32 call shape, whatever the batch (module doc)."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: Tensor) -> Tensor:
        """x (..., K) -> (..., N)."""
        return row_block_linear(x, self.weight, self.bias)


def row_block_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """`F.linear(x, weight, bias)` in blocks of `ROW_BLOCK` rows: x (..., K) -> (..., N)."""
    rows = x.reshape(-1, x.size(-1))
    m = rows.size(0)
    if m % ROW_BLOCK:
        rows = torch.cat([rows, rows.new_zeros(ROW_BLOCK - m % ROW_BLOCK, rows.size(1))])
    out = torch.cat([F.linear(block, weight, bias) for block in rows.split(ROW_BLOCK)])[:m]
    return out.view(*x.shape[:-1], weight.size(0))


def replace_linears(modules: nn.Module, make) -> nn.Module:
    """A copy of `modules` with every `nn.Linear` replaced by `make(that linear)` (the original's, so a
    wrapper can share its parameters); `modules` itself is left as it is."""
    out = copy.deepcopy(modules, memo={id(p): p for p in modules.parameters()})  # parameters shared, not copied
    for name, module in modules.named_modules():
        if isinstance(module, nn.Linear):
            parent_name, _, child = name.rpartition(".")
            setattr(out.get_submodule(parent_name) if parent_name else out, child, make(module))
    return out


class FusedQKVAttention(MultiHeadAttention):
    """A decoder self-attention whose queries, keys and values come from one int8 product (`qkv`, the three
    weights stacked): one activation quantisation and one kernel call instead of three per step."""

    qkv: RowInt8Linear

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """x (B, T, d_model) -> q, k, v, each (B, H, T, d_k)."""
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.split_heads(q), self.split_heads(k), self.split_heads(v)


Int8Kernels = dict[tuple[int, int], str]  # (in_features, out_features) -> "int_mm" | "packed"
_process_kernels: Int8Kernels = {}  # `use_int8_kernels`: what this process's int8 search models are built with


def use_int8_kernels(kernels: Int8Kernels) -> None:
    """Build this process's int8 search models with `kernels` from now on (the app sets `serving.kernels`'s choice
    at start, like torch's thread count; both kernels give the same bits, so it moves only speed)."""
    _process_kernels.clear()
    _process_kernels.update(kernels)


def process_int8_kernels() -> Int8Kernels:
    """A copy of what `use_int8_kernels` set (what a child process is told to use, so that it runs as fast)."""
    return dict(_process_kernels)


def int8_layer(kernels: Int8Kernels | None) -> Callable[[nn.Linear], RowInt8Linear]:
    """A maker of `RowInt8Linear`s that takes each layer's kernel from `kernels` (default: `use_int8_kernels`'s;
    a shape in neither gets `RowInt8Linear`'s default)."""
    kernels = dict(_process_kernels) if kernels is None else kernels
    return lambda linear: RowInt8Linear(linear, kernels.get((linear.in_features, linear.out_features)))


def fuse_self_attention(attention: MultiHeadAttention, source: MultiHeadAttention,
                        kernels: Int8Kernels | None = None) -> None:
    """Turn `attention` (a search copy) into a `FusedQKVAttention` over `source`'s float32 projections, in place."""
    stacked = nn.Linear(source.q_proj.in_features, 3 * source.q_proj.out_features)
    with torch.no_grad():
        stacked.weight.copy_(torch.cat([source.q_proj.weight, source.k_proj.weight, source.v_proj.weight]))
        stacked.bias.copy_(torch.cat([source.q_proj.bias, source.k_proj.bias, source.v_proj.bias]))
    attention.qkv = int8_layer(kernels)(stacked)
    attention.__class__ = FusedQKVAttention


def quantize_linear_int8(modules: nn.Module, kernels: Int8Kernels | None = None) -> nn.Module:
    """A copy of `modules` with every `nn.Linear` a `RowInt8Linear` (each shape's kernel from `kernels`), and each
    decoder self-attention's three projections one (`FusedQKVAttention`); `modules` itself is left as it is."""
    out = replace_linears(modules, int8_layer(kernels))
    originals = [m for m in modules.modules() if isinstance(m, DecoderLayer)]
    for original, layer in zip(originals, [m for m in out.modules() if isinstance(m, DecoderLayer)], strict=True):
        fuse_self_attention(layer.self_attn, original.self_attn, kernels)
    return out


def row_block_float32(modules: nn.Module) -> nn.Module:
    """A copy of `modules` with every `nn.Linear` a `RowBlockLinear` over the same parameters."""
    return replace_linears(modules, RowBlockLinear)


def search_model(model: Transformer, precision: str = "fp32", quantize=None,
                 int8_kernels: Int8Kernels | None = None) -> Transformer:
    """The model the search runs: `model`'s encoder, embeddings and positions (shared, float32) with a copy
    of its decoder and output projection whose linears are batch-invariant: `RowInt8Linear` for "int8" (each
    shape's kernel from `int8_kernels`, `serving.kernels`'s choice), `RowBlockLinear` for "fp32" (`quantize`, a
    function of a module, replaces either; the benches pass torch.ao's or torchao's). Eval mode."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "int8":
        if next(model.parameters()).device.type != "cpu":
            raise ValueError("int8 decoding runs on the CPU; load the model with device='cpu'")
    if quantize is None:
        quantize = functools.partial(quantize_linear_int8, kernels=int8_kernels) if precision == "int8" else row_block_float32
    search = Transformer.__new__(Transformer)  # no fresh weights: every part is either shared or replaced
    nn.Module.__init__(search)
    search.config = model.config
    for name in ("src_embed", "tgt_embed", "positional", "embed_dropout", "encoder"):
        setattr(search, name, getattr(model, name))
    replaced = quantize(nn.ModuleDict({"decoder": model.decoder, "generator": model.generator}))
    search.decoder, search.generator = replaced["decoder"], replaced["generator"]
    search.embed_dropout = copy.deepcopy(model.embed_dropout)  # no parameters: its own, so it can be called directly
    for module in [search.embed_dropout, *search.decoder.modules(), *search.generator.modules()]:
        call_directly(module)
    return search.eval()


@functools.cache
def _direct_class(cls: type) -> type:
    """`cls` whose instances are called straight through to `forward`."""
    return type(cls.__name__, (cls,), {"__call__": cls.forward, "_called_directly": True, "__module__": cls.__module__,
                                       "__doc__": f"{cls.__name__}, called without nn.Module's hook machinery."})


def call_directly(module: nn.Module) -> None:
    """Make calling `module` run its `forward` at once, without `nn.Module.__call__` (hooks, which nothing sets on
    the search's own copies, and about a microsecond a call), and find its submodules and parameters as plain
    attributes, not through `nn.Module.__getattr__` (assigning one later still updates both: `nn.Module.__setattr__`
    drops the plain one). A search step calls some 90 modules and reads some 150 such attributes. For modules that
    belong to the search alone: never for ones shared with the float32 model, whose projections `inside_head`
    hooks."""
    cls = type(module)
    if cls.forward is not nn.Module.forward and not getattr(cls, "_called_directly", False):  # not containers
        module.__class__ = _direct_class(cls)
    module.__dict__.update(module._modules)
    module.__dict__.update(module._parameters)


def int8_search_model(model: Transformer, quantize=quantize_linear_int8) -> Transformer:
    """`search_model(model, "int8", quantize)`."""
    return search_model(model, "int8", quantize)
