"""Training steps as CUDA graphs (`transformer/training/cuda_graphs.py`).

On any machine: the padded shapes, and the padded static-shape step run eagerly (`record=False`), which must
give the loss and gradients of the trainer's own eager step, alone and accumulated over batches of different
shapes, and a trainer running them that resumes exactly. On a machine with a CUDA GPU also: the recorded graphs
against the eager step, in float32 and bf16, with the random generator left as the eager step leaves it, and
exact resume with graphs."""
from __future__ import annotations

import json
import logging
from dataclasses import replace

import pytest
import torch

from transformer.config import ModelConfig
from transformer.model import Transformer
from transformer.training import train
from transformer.training.cuda_graphs import GraphedSteps, pad_to, padded_shape, round_up
from transformer.training.data import collate, toy_pairs
from transformer.training.loss import linear_cross_entropy
from transformer.training.config import PRESETS, TrainConfig
from transformer.training.trainer import Trainer, batch_loss, compile_choice

from test_fast_training import TINY
from test_train import assert_same_weights, load_state, run_train

PAD, BOS, EOS = 0, 2, 3
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def tiny_model(dropout: float = 0.0, device: str = "cpu", seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(src_vocab_size=40, tgt_vocab_size=40, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=64, dropout=dropout, max_len=64)
    return Transformer(cfg).to(device).train()


def batches(sizes: list[tuple[int, int, int]], seed: int = 0) -> list:
    """Host batches of `n` toy pairs with lengths in [lo, hi], one per (n, lo, hi)."""
    return [collate(toy_pairs("reverse", n, vocab_size=40, min_len=lo, max_len=hi, seed=seed + i), PAD, BOS, EOS)
            for i, (n, lo, hi) in enumerate(sizes)]


def eager_step(model: Transformer, host_batches: list, bf16: bool, fused: bool) -> tuple[list[float], dict]:
    """The trainer's eager accumulation (`Trainer.optimizer_step` without graphs): losses and gradients."""
    device = next(model.parameters()).device
    model.zero_grad(set_to_none=True)
    losses = []
    for b in host_batches:
        b = b.to(device)
        loss = batch_loss(model, b, 0.1, bf16, fused)
        (loss / (b.n_tokens * len(host_batches))).backward()
        losses.append(loss.item())
    return losses, {n: p.grad.clone() for n, p in model.named_parameters()}


def graphed_step(model: Transformer, host_batches: list, bf16: bool, fused: bool, record: bool,
                 steps: GraphedSteps | None = None) -> tuple[list[float], dict, GraphedSteps]:
    steps = steps or GraphedSteps(model, lambda m, b: batch_loss(m, b, 0.1, bf16, fused, static_shape=True),
                                  accum_steps=len(host_batches), record=record)
    steps.zero_grad()
    losses = [steps.accumulate(b) for b in host_batches]
    return [x.item() for x in losses], {n: p.grad.clone() for n, p in model.named_parameters()}, steps


def assert_gradients_close(got: dict, want: dict, tol: float) -> None:
    total = torch.stack([g.norm() for g in want.values()]).norm()
    for name, g in got.items():
        err = (g - want[name]).norm()
        assert err <= tol * (want[name].norm() + 0.01 * total), f"{name}: difference {err:.2e}"


# ---------------------------------------------------------------------------- shapes

def test_sizes_round_up_to_a_few_significant_binary_digits():
    assert [round_up(n, 3) for n in (1, 7, 8, 9, 13, 21, 37, 100)] == [1, 7, 8, 10, 14, 24, 40, 112]
    assert [round_up(n, 4) for n in (15, 17, 300, 1000)] == [15, 18, 320, 1024]
    for n in range(1, 3000):
        up = round_up(n, 3)
        assert n <= up < n * 1.25 + 1 and up.bit_length() - (up & -up).bit_length() + 1 <= 3  # significant digits


def test_a_batch_is_padded_to_its_shape_with_rows_that_add_no_loss():
    b = batches([(5, 3, 9)])[0]
    shape = padded_shape(b, max_len=64)
    assert shape == (round_up(5, 4), round_up(b.src.size(1), 3), round_up(b.tgt_in.size(1), 3))
    p = pad_to(b, (8, 16, 12), PAD)
    assert p.src.shape == (8, 16) and p.tgt_in.shape == p.tgt_out.shape == (8, 12)
    assert torch.equal(p.src[:5, : b.src.size(1)], b.src) and (p.src[:5, b.src.size(1):] == PAD).all()
    assert torch.equal(p.src[5:], p.src[:1].expand(3, -1)) and torch.equal(p.tgt_in[5:], p.tgt_in[:1].expand(3, -1))
    assert (p.tgt_out[5:] == PAD).all() and int((p.tgt_out != PAD).sum()) == b.n_tokens == p.n_tokens


def test_padded_lengths_stay_within_the_models_positions():
    b = batches([(3, 60, 62)])[0]  # 61 and 63 positions with <eos>/<bos>: 64 at 3 digits, the model's max_len
    assert padded_shape(b, max_len=64)[1:] == (64, 64)
    assert padded_shape(b, max_len=63)[1:] == (b.src.size(1), 63)


def test_static_shape_loss_equals_the_selected_rows_loss():
    g = torch.Generator().manual_seed(1)
    hidden = torch.randn(4, 6, 8, dtype=torch.float64, generator=g, requires_grad=True)
    weight = torch.randn(30, 8, dtype=torch.float64, generator=g, requires_grad=True)
    target = torch.randint(1, 30, (4, 6), generator=g)
    target[1, 2:] = 0
    target[3] = 0
    for chunk in (5, 512):
        want = linear_cross_entropy(hidden, weight, target, 0, 0.1, torch.float64, chunk)
        got = linear_cross_entropy(hidden, weight, target, 0, 0.1, torch.float64, chunk, static_shape=True)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got, (hidden, weight)), torch.autograd.grad(want, (hidden, weight))):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- the padded step, eagerly

@pytest.mark.parametrize("fused", [True, False])
def test_padded_static_step_gives_the_eager_loss_and_gradients(fused):
    """Two batches of different shapes accumulated, as with --accum-steps 2, each padded in rows and columns."""
    host = batches([(17, 3, 9), (35, 2, 5)])
    assert all(padded_shape(b, 64)[0] > b.src.size(0) for b in host)
    model = tiny_model()
    want_losses, want = eager_step(model, host, False, fused)
    losses, got, steps = graphed_step(model, host, False, fused, record=False)
    assert len(steps.shapes) == 2
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(want_losses), rtol=1e-5, atol=1e-5)
    assert_gradients_close(got, want, 1e-4)
    # the next step starts from zero, in the same tensors
    ids = [id(p.grad) for p in model.parameters()]
    losses2, got2, _ = graphed_step(model, host, False, fused, record=False, steps=steps)
    assert [id(p.grad) for p in model.parameters()] == ids and losses2 == losses
    assert_gradients_close(got2, want, 1e-4)


def test_cuda_graphs_flag_is_logged_checked_and_refused_without_a_gpu(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="transformer.training.trainer"):
        trainer = train.main([*TINY, "--run-dir", str(tmp_path / "a"), "--device", "cpu"])
    assert trainer.graphs is None  # auto, on a CPU
    with pytest.raises(ValueError, match="--cuda-graphs on needs one CUDA device"):
        train.main([*TINY, "--run-dir", str(tmp_path / "b"), "--cuda-graphs", "on", "--device", "cpu"])
    with pytest.raises(ValueError, match="cuda-graphs"):
        train.main([*TINY, "--run-dir", str(tmp_path / "c"), "--cuda-graphs", "sometimes"])
    with pytest.raises(ValueError, match="--compile on compiles the model inside the CUDA graphs"):
        train.main([*TINY, "--run-dir", str(tmp_path / "d"), "--compile", "on", "--device", "cpu"])
    with pytest.raises(ValueError, match="--compile must be"):
        train.main([*TINY, "--run-dir", str(tmp_path / "e"), "--compile", "yes"])
    with pytest.raises(ValueError, match="CUDA device"):
        GraphedSteps(tiny_model(), lambda m, b: batch_loss(m, b, 0.1, False, True, static_shape=True))


def test_the_model_is_compiled_inside_the_graphs_for_runs_long_enough_to_repay_it():
    en_de = TrainConfig(**PRESETS["en-de"])  # 10,000 steps of 2 x 4,096 tokens: 82M
    compiled, why = compile_choice(en_de, 1000)
    assert not compiled and "plans 82M tokens, under the 300M" in why
    long_run = replace(en_de, max_steps=20_000, max_tokens=16_384, accum_steps=1)  # 328M
    assert compile_choice(long_run, 1000)[0] and "at least" in compile_choice(long_run, 1000)[1]
    assert not compile_choice(replace(long_run, stop_at_step=1000), 1000)[0]  # stops after 16M
    assert compile_choice(replace(long_run, max_steps=0, max_epochs=40), 500)[0]  # 40 x 500 steps
    assert compile_choice(replace(en_de, compile="on"), 1000) == (True, "--compile on")
    assert compile_choice(replace(long_run, compile="off"), 1000) == (False, "--compile off")


# ---------------------------------------------------------------------------- exact resume

@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_a_run_of_padded_steps_resumed_half_way_equals_the_run_in_one_go(tmp_path, monkeypatch, device):
    """--resume with the trainer's padded static-shape steps: on a GPU recorded as CUDA graphs (a resumed run
    records its shapes again, at other steps than the first run did); on a CPU the same steps run eagerly.
    Dropout is on, so the random generators must be restored too: a resume that drew other masks would move
    the weights by far more than float32 rounding, which on a GPU may differ between runs (kernels need not add
    in the same order twice)."""
    def same(a: dict, b: dict) -> None:
        if device == "cpu":
            assert_same_weights(a, b)  # bit for bit
        else:
            for name in a:
                torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6, msg=name)

    if device == "cpu":
        monkeypatch.setattr(Trainer, "_graphed_steps", lambda self: self.graphed_steps(self.model, record=False))
        flags = ["--device", "cpu"]
    else:
        flags = ["--device", "cuda", "--cuda-graphs", "on", "--compile", "off"]
    steps = 30  # about 12 steps an epoch: the half-way stop is inside the second epoch
    straight = run_train(tmp_path / "straight", *flags, "--max-steps", str(steps), "--save-every", "1000")
    assert straight.graphs is not None and straight.graphs.record is (device == "cuda")
    assert len(straight.graphs.shapes) > 1
    run_dir = tmp_path / "halves"
    first = run_train(run_dir, *flags, "--max-steps", str(steps // 2), "--save-every", "1000")
    assert first.batch_in_epoch > 0
    with pytest.raises(AssertionError):  # the comparison below can tell the two apart
        same(load_state(run_dir)["model"], load_state(tmp_path / "straight")["model"])
    second = run_train(run_dir, *flags, "--max-steps", str(steps), "--save-every", "1000", "--resume")
    assert second.step == steps
    same(load_state(run_dir)["model"], load_state(tmp_path / "straight")["model"])


# ---------------------------------------------------------------------------- recorded, on a GPU

@needs_cuda
@pytest.mark.parametrize("bf16,tol", [(False, 1e-4), (True, 3e-2)])
@pytest.mark.parametrize("fused", [True, False])
def test_recorded_graphs_give_the_eager_loss_and_gradients(bf16, tol, fused):
    host = batches([(17, 3, 9), (35, 2, 5)])
    model = tiny_model(device="cuda")
    want_losses, want = eager_step(model, host, bf16, fused)
    losses, got, steps = graphed_step(model, host, bf16, fused, record=True)
    assert all(s.graph is not None for s in steps.shapes.values()) and len(steps.shapes) == 2
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(want_losses), rtol=tol / 10, atol=tol / 10)
    assert_gradients_close(got, want, tol)
    for _ in range(3):  # replays, with the same inputs copied in again: the same numbers
        losses2, got2, _ = graphed_step(model, host, bf16, fused, record=True, steps=steps)
        torch.testing.assert_close(torch.tensor(losses2), torch.tensor(losses), rtol=tol / 10, atol=tol / 10)
        assert_gradients_close(got2, got, tol)


@needs_cuda
def test_trainer_on_a_gpu_records_graphs_and_trains_like_the_eager_trainer(tmp_path, caplog):
    """A few optimizer steps of the tiny recipe: with graphs (and the model compiled inside them) and without,
    the same losses within float32 rounding (no dropout), and the choice is logged."""
    runs = {}
    for graphs in ("auto", "off"):
        with caplog.at_level(logging.INFO, logger="transformer.training.trainer"):
            trainer = train.main([*TINY, "--max-steps", "6", "--compile", "on" if graphs == "auto" else "auto",
                                  "--max-epochs", "10", "--accum-steps", "2", "--device", "cuda", "--precision", "fp32",
                                  "--run-dir", str(tmp_path / graphs), "--cuda-graphs", graphs, "--val-every", "6"])
        runs[graphs] = trainer
    assert runs["auto"].graphs is not None and runs["off"].graphs is None
    assert "as CUDA graphs" in caplog.text and "compiled by torch.compile" in caplog.text
    assert "--cuda-graphs off" in caplog.text
    a, b = (dict(runs[k].model.state_dict()) for k in ("auto", "off"))
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-3, atol=1e-4, msg=name)
    logs = [json.loads((tmp_path / k / "train_log.jsonl").read_text().splitlines()[-1]) for k in ("auto", "off")]
    assert logs[0]["step"] == logs[1]["step"] == 6
    assert logs[0]["train_loss"] == pytest.approx(logs[1]["train_loss"], rel=1e-3)


@needs_cuda
def test_recording_leaves_the_random_generator_where_the_eager_step_leaves_it():
    """With dropout, the graph path and the eager static path from the same seed: the warm-up's draws are
    undone, so the generator ends where one eager pass leaves it, and the masks drawn are the same."""
    host = batches([(17, 3, 9)])
    results = []
    for record in (True, False):
        model = tiny_model(dropout=0.3, device="cuda", seed=5)
        torch.cuda.manual_seed(11)
        losses, grads, _ = graphed_step(model, host, False, True, record=record)
        results.append((losses, torch.cuda.get_rng_state(), grads))
    (l1, s1, g1), (l2, s2, g2) = results
    assert torch.equal(s1, s2)
    torch.testing.assert_close(torch.tensor(l1), torch.tensor(l2), rtol=1e-5, atol=1e-5)
    assert_gradients_close(g1, g2, 1e-4)
