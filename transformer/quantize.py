"""Int8 decoding on CPU: the search runs a copy of the model whose decoder and output projection have
int8 weights; everything else stays float32.

    from transformer import load_pretrained
    tr = load_pretrained("checkpoints/en-de", quantize="int8")   # tr.precision == "int8"

At beam 5 a decoding step reads every decoder and output weight for a handful of rows, so it is
bound by memory traffic: int8 weights (a quarter of the bytes) make the search about twice as fast.
How (`int8_search_model`): PyTorch's dynamic quantisation (`torch.ao.quantization.quantize_dynamic`,
per-channel int8 weights, activations quantised per call) of every `nn.Linear` of the decoder and of
the output projection. torchao is the successor of `torch.ao.quantization`, but its CPU int8 paths
were slower than float32 for this model (bench/decode_latency.py measures both; README, Speed).

What stays float32, and why: the encoder and the embeddings (shared with the float32 model, not
copied; the encoder runs once per sentence) and the attention capture. Attention maps computed through
int8 weights drift from the float32 ones by up to ~0.1 (max abs, 50 val sentences), more than the 0.02
the app allows, so `Translator` draws every map (and the step probabilities) with one teacher-forced
float32 pass over the hypothesis the int8 search found: the maps are exactly the float32 model's maps
of that output.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn

from .model import Transformer

PRECISIONS = ("fp32", "int8")
ENGINES = ("x86", "fbgemm", "onednn", "qnnpack")  # torch's quantised CPU kernels, one of them is enough


def int8_available() -> bool:
    """Whether this torch build has a quantised CPU engine (x86 and ARM builds do)."""
    return any(engine in torch.backends.quantized.supported_engines for engine in ENGINES)


def quantize_linear_int8(modules: nn.Module) -> nn.Module:
    """A copy of `modules` with every `nn.Linear` replaced by a dynamically quantised int8 one
    (per-output-channel weight scales); `modules` itself is left as it is."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao on every call
        warnings.simplefilter("ignore")
        return quantize_dynamic(modules, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=False)


def int8_search_model(model: Transformer, quantize=quantize_linear_int8) -> Transformer:
    """The model the search runs in int8 mode: `model`'s encoder, embeddings and positions (shared, float32)
    with a copy of its decoder and output projection passed through `quantize` (default
    `quantize_linear_int8`; bench/decode_latency.py also passes torchao's). Eval mode, CPU only."""
    if next(model.parameters()).device.type != "cpu":
        raise ValueError("int8 decoding runs on the CPU; load the model with device='cpu'")
    if not int8_available():
        engines = torch.backends.quantized.supported_engines
        raise RuntimeError(f"this torch build has no quantised CPU engine (it has {engines})")
    search = Transformer.__new__(Transformer)  # no fresh weights: every part is either shared or quantised
    nn.Module.__init__(search)
    search.config = model.config
    for name in ("src_embed", "tgt_embed", "positional", "embed_dropout", "encoder"):
        setattr(search, name, getattr(model, name))
    quantized = quantize(nn.ModuleDict({"decoder": model.decoder, "generator": model.generator}))
    search.decoder, search.generator = quantized["decoder"], quantized["generator"]
    return search.eval()
