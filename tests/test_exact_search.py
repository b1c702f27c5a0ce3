"""One arithmetic on every serving path: each int8 kernel the probe can choose (`quantize.INT8_KERNELS`), forced for
every layer in turn, gives the same translations, n-best lists and scores, bit for bit, alone and in batches; so
the lesson's quotes hold whichever kernel a computer's probe picks. `bench/exact_search.py` runs the same check
on a thousand sentences and more settings."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from transformer import quantize
from transformer.quantize import EXACT_FLOAT_TERMS, INT8_KERNELS, RowInt8Linear, kernels_for
from transformer.serving.kernels import step_linears
from transformer.translator import Translator, load_pretrained

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_lesson_quotes import QUOTES, holds, quote_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OWN = {  # our own sentences, short and long
    "en-de": ["The old fisherman mends his nets before sunrise.", "Could you water my plants while I am away?",
              "Two children are building a sandcastle near the pier.", "Yes.",
              "My sister has been learning Japanese for three years, and she still finds the writing hard.",
              "He thinks the weather will be better tomorrow.", "Where is the nearest train station?"],
    "de-en": ["Ich weiß, dass mein Bruder Gitarre spielt.", "Kannst du bitte das Fenster aufmachen?",
              "Unser Nachbar arbeitet als Busfahrer.", "Danke schön!"],
}
SETTINGS = (("greedy", 1), ("beam", 1), ("beam", 3), ("beam", 5), ("beam", 10))


def test_the_float_kernel_is_exact_at_the_largest_sum_it_takes():
    """Every product at its largest (63 x 127) over `EXACT_FLOAT_TERMS` inputs: the float32 sum is the integer
    sum; one input more would pass 2^24, so the float kernel refuses a wider layer."""
    for k in (EXACT_FLOAT_TERMS, 1024):
        q = torch.full((3, k), 63.0)
        q[1, ::2] = -63.0
        w = torch.full((k, 5), 127, dtype=torch.int8)
        exact = torch._int_mm(q.to(torch.int8), w)
        assert torch.equal(torch.mm(q, w.float()), exact.float()) and exact.abs().max() < 2**24
    assert "float" in kernels_for(EXACT_FLOAT_TERMS) and "float" not in kernels_for(EXACT_FLOAT_TERMS + 1)
    with pytest.raises(ValueError, match="kernel must be one of"):
        RowInt8Linear(torch.nn.Linear(EXACT_FLOAT_TERMS + 1, 4), kernel="float")


@pytest.mark.parametrize("shape", [(256, 768), (1024, 256), (256, 8008)])
def test_every_kernel_computes_the_same_bits(shape):
    """Random layers of the models' shapes, rows of one beam and of a batch, with an outlier per row."""
    generator = torch.Generator().manual_seed(sum(shape))
    linear = torch.nn.Linear(*shape)
    torch.nn.init.normal_(linear.weight, std=shape[0] ** -0.5, generator=generator)
    layers = {kernel: RowInt8Linear(linear, kernel=kernel) for kernel in kernels_for(shape[0])}
    assert set(layers) == set(INT8_KERNELS)  # every kernel is there to compare (x86 torch has the packed one)
    with torch.inference_mode():
        for rows in (1, 5, 40):
            x = torch.randn(rows, shape[0], generator=generator)
            x[:, 7] *= 30
            outputs = [layer(x) for layer in layers.values()]
            assert all(torch.equal(outputs[0], out) for out in outputs[1:]), shape


def paths(served: Translator) -> dict[str, Translator]:
    """`served`'s model searched with each kernel for every layer shape."""
    shapes = [(lin.in_features, lin.out_features) for lin in step_linears(served.model.config)]
    out = {}
    for kernel in INT8_KERNELS:
        search = quantize.search_model(served.model, "int8", int8_kernels=dict.fromkeys(shapes, kernel))
        assert {m.kernel for m in search.modules() if isinstance(m, RowInt8Linear)} == {kernel}
        out[kernel] = Translator(served.model, served.tokenizer, truecaser=served.truecaser, search_model=search,
                                 precision="int8")
    return out


@pytest.fixture(scope="module")
def served() -> dict[str, dict[str, Translator]]:
    """Each kernel's path of every model with sentences of its own here or a quote in the docs."""
    quoted = {quote_query(quote).get("model", "en-de") for quote in QUOTES}
    names = sorted({*OWN, *quoted})
    return {name: paths(load_pretrained(ROOT / "checkpoints" / name, quantize="int8")) for name in names}


def fingerprints(translations) -> list[list[tuple]]:
    """Every candidate's ids and the exact bits of its score and log-probability."""
    return [[(c.ids, c.score.hex(), c.log_prob.hex()) for c in t.candidates] for t in translations]


@pytest.mark.slow
@pytest.mark.parametrize("model", list(OWN))
def test_every_serving_path_translates_to_the_same_bits_alone_and_in_a_batch(served, model):
    """Each kernel forced in turn: the same n-best, ids and score bits, for a batch of our sentences and for each
    sentence alone, greedy and beam 1, 3, 5 and 10. One differing bit fails."""
    found = {}
    for kernel, tr in served[model].items():
        for method, beam in SETTINGS:
            options = tr.decoding_options(method, beam)
            sources = [tr.source(text) for text in OWN[model]]
            together = fingerprints(tr.translate_sources(sources, options, output_attentions=False))
            alone = [fingerprints(tr.translate_sources([s], options, output_attentions=False))[0] for s in sources]
            assert together == alone, (kernel, method, beam)
            found[kernel, method, beam] = together
    first = next(iter(served[model]))
    for (kernel, method, beam), got in found.items():
        assert got == found[first, method, beam], (kernel, method, beam)


def head_mask(off: str, tr: Translator) -> dict | None:
    """A link's `off` ("e1.3,c4.8") as `translate`'s head mask."""
    if not off:
        return None
    cfg, kinds = tr.model.config, {"e": "encoder", "d": "decoder", "c": "cross"}
    mask = {kind: torch.ones(cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers, cfg.n_heads)
            for kind in kinds.values()}
    for item in off.split(","):
        layer, head = item[1:].split(".")
        mask[kinds[item[0]]][int(layer) - 1, int(head) - 1] = 0
    return mask


@pytest.mark.slow
def test_every_quoted_translation_holds_on_every_serving_path(served):
    """Each quote of docs/teaching.md and the README (`test_lesson_quotes.QUOTES`) as the link asks for it (the
    compare tab: greedy and beam), translated on each kernel: the quote holds on every one. The browser test
    checks the page on the kernels the app measures; this one covers the kernels another computer may pick."""
    wrong = []
    for quote in QUOTES:
        query = quote_query(quote)
        model = query.get("model", "en-de")
        methods = ("greedy", "beam") if quote.where == "compare" else (query.get("method", "beam"),)
        for kernel, tr in served[model].items():
            shown = " ".join(tr.translate(query["text"], method=m, beam_size=int(query.get("beam", 5)),
                                          output_attentions=False, head_mask=head_mask(query.get("off", ""), tr)).text
                             for m in methods)
            if not holds(shown, quote):
                wrong.append((quote.page, quote.link, kernel, quote.says, shown))
    assert not wrong, wrong


@pytest.mark.slow
def test_the_thread_count_changes_no_bit(served):
    """One thread or two: the same n-best bits and the same maps. Without `arithmetic.pin_float_kernels`, MKL split
    the encoder's small float32 products differently on two threads (seen: 35 of 60 sentences' scores differed)."""
    import numpy as np

    tr = served["en-de"]["int_mm"]
    options = tr.decoding_options("beam", 5)
    threads, found = torch.get_num_threads(), {}
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            found[count] = fingerprints(tr.translate_sources([tr.source(t) for t in OWN["en-de"]], options,
                                                             output_attentions=False))
            maps = tr.translate(OWN["en-de"][4], beam_size=5).attention
            found[count, "maps"] = [getattr(maps, kind) for kind in ("encoder", "decoder", "cross")]
    finally:
        torch.set_num_threads(threads)
    assert found[1] == found[2]
    assert all(np.array_equal(a, b) for a, b in zip(found[1, "maps"], found[2, "maps"], strict=True))
