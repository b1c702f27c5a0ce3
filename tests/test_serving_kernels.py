"""The serving path is chosen by measuring: injected timings decide each layer's int8 kernel, an override still
wins, the probe times the model's own step shapes, every kernel gives the same bits, and a slow CPU is told so."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from transformer import quantize
from transformer.config import ModelConfig
from transformer.explorer import startup
from transformer.model import Transformer
from transformer.quantize import RowInt8Linear, int8_available
from transformer.serving.kernels import (
    PROBE_ROWS, SLOW_STEP_MS, ServingPath, choose, step_linears, time_layers,
)

needs_int8 = pytest.mark.skipif(not int8_available(), reason="this torch build has no quantised CPU kernels")
SMALL = ModelConfig(src_vocab_size=300, tgt_vocab_size=300, d_model=32, n_heads=4, n_encoder_layers=1,
                    n_decoder_layers=2, d_ff=64, dropout=0.0)
SHAPES = [(256, 768), (256, 256), (256, 1024), (1024, 256), (256, 8008)]


def timings(int_mm: list[float], packed: list[float] | None, float_: list[float] | None) -> dict:
    """`time_layers`' form from per-shape milliseconds (None: that kernel is not there)."""
    out = {}
    for name, ms in (("int8:int_mm", int_mm), ("int8:packed", packed), ("int8:float", float_)):
        if ms is not None:
            out[name] = dict(zip(SHAPES, ms, strict=True))
    return out


def test_an_avx2_cpu_whose_int_mm_is_a_scalar_loop_serves_the_packed_kernel():
    path = choose(timings([49, 48, 67, 80, 196], [1.0, 1.9, 1.3, 1.5, 6.7], [3, 3, 3, 3, 7]))
    assert path.precision == "int8"
    assert dict(path.kernels) == dict.fromkeys(SHAPES, "packed")
    assert path.step_ms["int8"] == pytest.approx(1.0 + 1.9 + 1.3 + 1.5 + 6.7)


def test_each_layer_shape_takes_its_fastest_kernel():
    path = choose(timings([0.58, 1.14, 0.9, 0.6, 2.5], [0.66, 1.48, 0.76, 0.88, 1.38], [1.5, 0.9, 2, 2.1, 5.6]))
    assert dict(path.kernels) == {(256, 768): "int_mm", (256, 256): "float", (256, 1024): "packed",
                                  (1024, 256): "int_mm", (256, 8008): "packed"}
    assert path.step_ms["int8"] < min(path.step_ms[k] for k in ("int8:int_mm", "int8:packed", "int8:float"))


def test_the_float_kernel_serves_where_it_measures_fastest():
    path = choose(timings([9, 9, 9, 9, 9], [2, 2, 2, 2, 2], [1, 1, 1, 1, 1]))
    assert (path.precision, set(dict(path.kernels).values())) == ("int8", {"float"})
    assert "5.0 ms a search step" in path.why


def test_the_float_kernel_must_win_by_a_margin():
    """5 % faster is within what a busy machine's timing moves: the integer kernel stays."""
    path = choose(timings([9, 9, 9, 9, 9], [2, 2, 2, 2, 2], [1.9, 1.9, 1.9, 1.9, 1.9]))
    assert set(dict(path.kernels).values()) == {"packed"}


def test_without_quantised_engines_int_mm_and_float_are_timed_and_served():
    path = choose(timings([2, 2, 2, 2, 2], None, [1, 1, 1, 3, 3]))
    assert path.precision == "int8" and set(path.step_ms) == {"int8", "int8:int_mm", "int8:float"}
    assert dict(path.kernels)[(1024, 256)] == "int_mm"


def test_a_cpu_whose_fastest_path_is_still_slow_is_told_so_and_a_fast_one_is_not():
    per_shape = SLOW_STEP_MS / len(SHAPES)
    slow = choose(timings([per_shape * 3] * 5, [per_shape * 2] * 5, [per_shape * 1.1] * 5))
    fast = choose(timings([per_shape] * 5, [per_shape * 0.5] * 5, [per_shape * 0.9] * 5))
    assert slow.slow and "slow for this model" in slow.slow_note
    assert not fast.slow and fast.slow_note == ""


def test_the_probe_times_the_decoders_own_step_shapes():
    """Every linear an incremental step runs (the cross-attention keys and values are cached per sentence),
    counted per decoder layer, and the output projection once."""
    model = Transformer(SMALL).eval()
    search = quantize.quantize_linear_int8(torch.nn.ModuleDict({"d": model.decoder, "g": model.generator}))
    per_step = {(lin.in_features, lin.out_features) for lin in step_linears(SMALL)}
    expected = {(32, 96), (32, 32), (32, 64), (64, 32), (32, 300)}
    assert per_step == expected
    built = {(m.in_features, m.out_features) for m in search.modules() if isinstance(m, RowInt8Linear)}
    assert built == per_step  # every shape the search model multiplies by is timed
    counts = {(lin.in_features, lin.out_features): lin.count for lin in step_linears(SMALL)}
    assert counts[(32, 32)] == 3 * SMALL.n_decoder_layers and counts[(32, 300)] == 1


@needs_int8
def test_the_real_probe_times_every_candidate_on_every_shape():
    layer_ms = time_layers(SMALL, budget_s=0.5)
    shapes = {(lin.in_features, lin.out_features) for lin in step_linears(SMALL)}
    assert set(layer_ms) == {"int8:int_mm", "int8:packed", "int8:float"}
    assert all(set(per_shape) == shapes and all(ms > 0 for ms in per_shape.values()) for per_shape in layer_ms.values())
    assert len(PROBE_ROWS) >= 2  # one beam and a batch: the kernels rank differently by row count


@needs_int8
def test_the_chosen_kernels_build_the_search_model_and_give_the_same_bits(monkeypatch):
    """The app sets the measured kernels for the process; a model built with them computes what the default
    kernels compute, bit for bit (so the choice moves speed only)."""
    torch.manual_seed(0)
    model = Transformer(SMALL).eval()
    every_packed = {(lin.in_features, lin.out_features): "packed" for lin in step_linears(SMALL)}
    monkeypatch.setattr(quantize, "_process_kernels", {})
    default = quantize.search_model(model, "int8")
    quantize.use_int8_kernels(every_packed)
    packed = quantize.search_model(model, "int8")
    assert all(m.kernel == "packed" for m in packed.decoder.modules() if isinstance(m, RowInt8Linear)
               if (m.in_features, m.out_features) in every_packed)
    assert any(m.kernel == "int_mm" for m in default.decoder.modules() if isinstance(m, RowInt8Linear))
    x = torch.randn(3, 5, SMALL.d_model)
    with torch.inference_mode():
        for a, b in zip(default.decoder.layers, packed.decoder.layers, strict=True):
            assert torch.equal(a.ff(x), b.ff(x))
            assert torch.equal(a.self_attn.qkv(x), b.self_attn.qkv(x))
        assert torch.equal(default.generator(x), packed.generator(x))


def test_a_bad_kernel_name_is_a_clear_error():
    with pytest.raises(ValueError, match="kernel must be one of"):
        RowInt8Linear(torch.nn.Linear(4, 4), kernel="fast")


def measured() -> ServingPath:
    """A probe's result as `serving_choice` gets it: the packed kernel the fastest."""
    return choose(timings([2.0] * 5, [1.0] * 5, [3.0] * 5))


@pytest.mark.parametrize("env,expected,why", [
    ("", "packed", "kernels measured fastest"), ("float", "float", "kernel set by TRANSFORMER_INT8_KERNEL"),
    (" INT_MM ", "int_mm", "kernel set by TRANSFORMER_INT8_KERNEL"), ("int4", "packed", "kernels measured fastest"),
])
def test_the_environment_sets_every_layers_kernel(monkeypatch, env, expected, why):
    monkeypatch.setenv("TRANSFORMER_INT8_KERNEL", env)
    monkeypatch.setattr(quantize, "_process_kernels", {})
    asked = []
    choice = startup.serving_choice(SMALL, probe=lambda config: asked.append(config) or measured())
    shapes = {(lin.in_features, lin.out_features) for lin in step_linears(SMALL)} if expected != "packed" \
        else set(SHAPES)
    assert choice.precision == "int8" and choice.why.startswith(why)
    assert asked == ([] if "set by" in why else [SMALL])  # a kernel set by hand needs no measuring
    assert quantize._process_kernels == dict.fromkeys(shapes, expected)


def test_the_retired_precision_setting_is_said_and_changes_nothing(monkeypatch, caplog):
    monkeypatch.setenv("TRANSFORMER_PRECISION", "fp32")
    monkeypatch.delenv("TRANSFORMER_INT8_KERNEL", raising=False)
    monkeypatch.setattr(quantize, "_process_kernels", {})
    choice = startup.serving_choice(SMALL, probe=lambda config: measured())
    assert choice.precision == "int8" and "TRANSFORMER_PRECISION is no longer read" in caplog.text


@needs_int8
@pytest.mark.slow  # starts the search process
def test_the_search_process_is_told_the_kernels_the_app_measured(monkeypatch):
    """The child builds its int8 models with the parent's measured kernels (else an AVX2 CPU's everyday
    searches would run on its slow kernel there)."""
    from transformer.serving.search_process import SearchProcess, kernels_from_argv

    chosen = {(256, 768): "packed", (256, 8008): "int_mm"}
    monkeypatch.setattr(quantize, "_process_kernels", {})
    quantize.use_int8_kernels(chosen)
    searcher = SearchProcess(threads=1)
    try:
        searcher.start()
        argv = list(searcher._process.args)  # the command the child was started with
        module_args = argv[argv.index("transformer.serving.search_process") + 1:]
        assert kernels_from_argv(module_args) == chosen
    finally:
        searcher.close()


@needs_int8
def test_the_shipped_model_translates_to_the_same_bits_whichever_int8_kernels_serve():
    """What the probe chooses never changes a translation: en-de with every layer on `_int_mm` and with every
    layer on the packed linear gives the same n-best lists and scores (our own sentences)."""
    from transformer.translator import Translator, load_pretrained

    served = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    shapes = [(lin.in_features, lin.out_features) for lin in step_linears(served.model.config)]

    def with_kernel(kernel: str) -> Translator:
        search = quantize.search_model(served.model, "int8", int8_kernels=dict.fromkeys(shapes, kernel))
        return Translator(served.model, served.tokenizer, truecaser=served.truecaser, search_model=search,
                          precision="int8")

    sentences = ["The old fisherman mends his nets before sunrise.", "Could you water my plants while I am away?",
                 "Two children are building a sandcastle near the pier."]
    by_int_mm, by_packed = with_kernel("int_mm"), with_kernel("packed")
    for method, beam in (("greedy", 1), ("beam", 5)):
        for sentence in sentences:
            x = by_int_mm.translate(sentence, method=method, beam_size=beam, output_attentions=False)
            y = by_packed.translate(sentence, method=method, beam_size=beam, output_attentions=False)
            assert [(c.ids, c.score) for c in x.candidates] == [(c.ids, c.score) for c in y.candidates]


def test_a_kernel_far_behind_the_fastest_is_timed_no_further():
    """The probe stays short where one kernel is a scalar loop: once a call is `LOSER` times slower than the
    fastest candidate, it is not repeated; a close contender gets every repeat."""
    from transformer.serving.kernels import LOSER, REPEATS, best_ms

    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.004)

    ms = best_ms(slow, deadline=time.perf_counter() + 60, beaten_by=4.0 / (LOSER * 4))
    assert len(calls) == 2 and ms >= 4.0  # the call that picks the kernel, then one timed
    calls.clear()
    best_ms(slow, deadline=time.perf_counter() + 60, beaten_by=4.0)
    assert len(calls) == 1 + REPEATS
