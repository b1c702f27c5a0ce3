"""The fast training path trains the same model as the reference path: the fused loss equals
`F.cross_entropy` on the logits, the trainer's loss and gradients agree between the two paths, the cheap
dropout is dropout, and the precision is chosen by the hardware found (logged, and a flag overrides it).
Exact resume with the fast path is tested in test_train.py (its runs use it by default)."""
from __future__ import annotations

import json
import shutil
import logging

import pytest
import torch
import torch.nn.functional as F

from transformer.hub import load_int8_weights, save_int8_weights
from transformer.model import Transformer, dropout
from transformer.training import hardware, train
from transformer.training.data import collate, toy_pairs
from transformer.training.loss import chunk_rows, linear_cross_entropy

TINY = ["--task", "reverse", "--toy-symbols", "12", "--toy-train-size", "64", "--toy-val-size", "8",
        "--d-model", "32", "--n-heads", "2", "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "64",
        "--dropout", "0.0", "--max-tokens", "256", "--max-steps", "0", "--max-epochs", "0", "--no-progress",
        "--no-export", "--threads", "1", "--seed", "3"]


# ---------------------------------------------------------------------------- the fused loss

@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("chunk", [1, 5, chunk_rows(torch.device("cpu")), chunk_rows(torch.device("cuda"))])
def test_fused_loss_equals_cross_entropy_on_logits(smoothing, chunk):
    """float64, so the comparison is exact up to rounding: value and both gradients, padding ignored."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 7, 16, dtype=torch.float64, generator=g, requires_grad=True)
    weight = torch.randn(40, 16, dtype=torch.float64, generator=g, requires_grad=True)
    target = torch.randint(1, 40, (3, 7), generator=g)
    target[0, 4:] = 0  # padding
    target[2, 1:] = 0
    reference = F.cross_entropy((hidden @ weight.T).flatten(0, 1), target.flatten(), ignore_index=0,
                                label_smoothing=smoothing, reduction="sum")
    ref_grads = torch.autograd.grad(reference * 0.37, (hidden, weight))
    fused = linear_cross_entropy(hidden, weight, target, 0, smoothing, torch.float64, chunk=chunk)
    grads = torch.autograd.grad(fused * 0.37, (hidden, weight))
    torch.testing.assert_close(fused, reference, rtol=1e-12, atol=1e-12)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_a_gpu_forms_a_batch_of_logits_at_once_and_a_cpu_a_cache_sized_chunk():
    """On a GPU each chunk costs its kernel launches (the host bounds a step there); on a CPU a chunk of
    logits stays in cache. A 16,384-token batch has fewer real target rows than the GPU's chunk."""
    assert chunk_rows(torch.device("cuda")) >= 16384 > chunk_rows(torch.device("cpu"))


def test_fused_loss_without_grad_gives_the_value_only():
    hidden, weight = torch.randn(5, 8), torch.randn(11, 8)
    target = torch.tensor([1, 2, 3, 0, 10])
    with torch.no_grad():
        value = linear_cross_entropy(hidden, weight, target, 0, 0.1)
    want = F.cross_entropy(hidden @ weight.T, target, ignore_index=0, label_smoothing=0.1, reduction="sum")
    torch.testing.assert_close(value, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- the trainer's two paths

def batch_loss_and_grads(precision: str, fused: bool, tmp_path) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One batch through a freshly built tiny trainer (same seed, so same weights): loss per token and gradients."""
    trainer = train.main([*TINY, "--run-dir", str(tmp_path / f"{precision}-{fused}"), "--precision", precision,
                          "--fused" if fused else "--no-fused"])
    t = trainer.tokenizer
    batch = collate(toy_pairs("reverse", 16, vocab_size=16, min_len=3, max_len=9, seed=1), t.pad_id, t.bos_id,
                    t.eos_id)
    trainer.model.train()
    trainer.model.zero_grad()
    loss = trainer.losses_on(batch)[0] / batch.n_tokens
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("bf16", 3e-2)])
def test_fast_path_loss_and_gradients_match_the_reference_path(tmp_path, precision, tol):
    ref_loss, ref_grads = batch_loss_and_grads(precision, False, tmp_path)
    loss, grads = batch_loss_and_grads(precision, True, tmp_path)
    torch.testing.assert_close(loss, ref_loss, rtol=tol / 10, atol=tol / 10)
    assert grads.keys() == ref_grads.keys()
    total = torch.stack([g.norm() for g in ref_grads.values()]).norm()
    for name, g in grads.items():
        # bf16 rounds each product, so compare norms of the difference, relative to the tensor's scale (a
        # gradient that is zero in exact arithmetic, like a key bias's, is held to a share of the total)
        err = (g - ref_grads[name]).norm()
        assert err <= tol * (ref_grads[name].norm() + 0.01 * total), f"{name}: difference {err:.2e}"


# ---------------------------------------------------------------------------- the cheap dropout

def test_dropout_keeps_the_right_share_scales_and_repeats_with_the_seed():
    x = torch.ones(400, 500)
    torch.manual_seed(5)
    y = dropout(x, 0.3, True)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.005  # 200k draws: the binomial spread is 0.001
    assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / 0.7))
    torch.manual_seed(5)
    assert torch.equal(dropout(x, 0.3, True), y)
    assert dropout(x, 0.3, False) is x and dropout(x, 0.0, True) is x


def test_dropout_gradient_is_zero_where_dropped():
    x = torch.randn(64, 64, requires_grad=True)
    torch.manual_seed(1)
    y = dropout(x, 0.5, True)
    y.sum().backward()
    assert torch.equal(x.grad == 0, y == 0)
    assert torch.allclose(x.grad[y != 0], torch.full_like(x.grad[y != 0], 2.0))


def test_dropout_masks_are_independent_of_neighbouring_elements():
    """Four masks come from one 64-bit draw: neighbours must still be uncorrelated."""
    torch.manual_seed(2)
    keep = (dropout(torch.ones(200_000), 0.5, True) != 0).float()
    pairs = keep.view(-1, 4)
    corr = torch.corrcoef(pairs.T)
    off_diagonal = corr[~torch.eye(4, dtype=torch.bool)]
    assert off_diagonal.abs().max() < 0.02


# ---------------------------------------------------------------------------- the hardware choice

@pytest.mark.parametrize("flags,speedup,kind,bf16", [
    ({"avx512f", "amx_bf16", "amx_tile", "avx512_bf16"}, 7.0, "amx", True),
    ({"avx512f", "avx512_bf16"}, 2.2, "avx512_bf16", True),
    ({"avx512f", "avx512_bf16"}, 0.6, "avx512_bf16", False),  # a VM that hides AMX: the flag alone misleads
    ({"avx2", "avx512f"}, None, "cpu", False),
    (set(), None, "cpu", False),
])
def test_hardware_choice_by_cpu_flags_and_measured_speed_is_logged(caplog, flags, speedup, kind, bf16):
    hw = hardware.detect(torch.device("cpu"), flags, speedup=speedup)
    assert hw.kind == kind and hw.bf16_speedup == speedup
    with caplog.at_level(logging.INFO, logger="transformer.training.hardware"):
        assert hardware.use_bf16("auto", hw) is bf16
    assert ("bf16 autocast" if bf16 else "float32") in caplog.text and "chosen for" in caplog.text
    if speedup is not None:
        assert f"{speedup:.2f}x" in caplog.text


def test_bf16_speedup_is_measured_on_a_cpu_with_bf16_flags():
    hw = hardware.detect(torch.device("cpu"), {"avx512_bf16"})
    assert hw.bf16_speedup is not None and hw.bf16_speedup > 0
    assert hardware.detect(torch.device("cpu"), {"avx2"}).bf16_speedup is None


def test_precision_flag_overrides_the_hardware(caplog):
    amx, plain = hardware.detect(torch.device("cpu"), {"amx_bf16"}, 7.0), hardware.detect(torch.device("cpu"), set())
    with caplog.at_level(logging.INFO, logger="transformer.training.hardware"):
        assert hardware.use_bf16("fp32", amx) is False
        assert hardware.use_bf16("bf16", plain) is True
    assert "--precision fp32" in caplog.text and "--precision bf16" in caplog.text
    assert hardware.detect(torch.device("cuda"), set()).kind == "cuda"


def test_training_on_a_gpu_leaves_out_cudnn_attention_and_a_cpu_keeps_every_backend():
    """cuDNN's attention builds a graph per new shape; token-bucketed batches bring one almost every step.
    (The flags are the process's; setting them needs no GPU.)"""
    before = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(True)
    try:
        with hardware.training_attention(torch.device("cuda")):
            assert not torch.backends.cuda.cudnn_sdp_enabled()
            assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
            assert torch.backends.cuda.math_sdp_enabled()
        assert torch.backends.cuda.cudnn_sdp_enabled()
        with hardware.training_attention(torch.device("cpu")):
            assert torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)


def test_trainer_logs_its_choice_and_rejects_a_bad_precision(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="transformer.training.hardware"):
        trainer = train.main([*TINY, "--run-dir", str(tmp_path / "a"), "--precision", "fp32"])
    assert trainer.autocast is False and "float32: set by --precision fp32" in caplog.text
    with pytest.raises(ValueError, match="precision"):
        train.main([*TINY, "--run-dir", str(tmp_path / "b"), "--precision", "fp16"])


# ---------------------------------------------------------------------------- snapshots of the model learning

def test_learning_snapshots_are_int8_with_step_epoch_and_scores_and_shipped_by_the_export(tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "export"
    trainer = train.main([*[a for a in TINY if a != "--no-export"], "--max-epochs", "4", "--run-dir",
                          str(tmp_path / "run"), "--learning-snapshots", "1,4,9", "--output", str(out)])
    records = json.loads((out / "snapshots" / "snapshots.json").read_text())
    assert [r["step"] for r in records] == [1, 4, 9] and trainer.step > 9
    assert all("epoch" in r and "score" in r and "val_loss" in r for r in records)
    stored = load_file(str(out / "snapshots" / "step_000004.safetensors"))
    assert {t.dtype for t in stored.values()} == {torch.int8, torch.float16, torch.float32}
    weights = load_int8_weights(out / "snapshots" / "step_000004.safetensors")
    assert weights.keys() == trainer.model.state_dict().keys()
    # the last snapshot is close to the weights it was taken from (the run ended at step 9 or later)
    final = load_int8_weights(out / "snapshots" / "step_000009.safetensors")
    model = Transformer(trainer.model.config)
    model.load_state_dict(final)  # loads: every tensor is there, in its shape


def test_int8_weights_round_trip_within_half_a_step_per_row(tmp_path):
    g = torch.Generator().manual_seed(0)
    weights = {"w": torch.randn(30, 40, generator=g) * torch.linspace(0.01, 3, 30)[:, None], "b": torch.randn(40)}
    save_int8_weights(weights, tmp_path / "s.safetensors")
    back = load_int8_weights(tmp_path / "s.safetensors")
    step = weights["w"].abs().amax(1, keepdim=True) / 127
    assert ((back["w"] - weights["w"]).abs() <= step * 0.5 + 1e-3 * step).all()
    torch.testing.assert_close(back["b"], weights["b"].half().float())


def test_tied_matrices_are_stored_once_and_loaded_under_every_name(tmp_path):
    g = torch.Generator().manual_seed(0)
    shared = torch.randn(50, 16, generator=g)
    save_int8_weights({"embed": shared, "generator": shared, "w": torch.randn(50, 16, generator=g)}, tmp_path / "t")
    save_int8_weights({"embed": shared, "generator": shared.clone(), "w": torch.randn(50, 16)}, tmp_path / "u")
    assert (tmp_path / "t").stat().st_size < (tmp_path / "u").stat().st_size - 50 * 16  # one int8 copy fewer
    back = load_int8_weights(tmp_path / "t")
    assert back.keys() == {"embed", "generator", "w"} and torch.equal(back["embed"], back["generator"])


def test_a_continuation_from_the_export_ships_the_earlier_snapshots_too(tmp_path):
    """On a new machine only the committed export is left: its snapshots go on into the next export."""
    out, run = tmp_path / "export", tmp_path / "run"
    args = [*[a for a in TINY if a != "--no-export"], "--max-epochs", "100", "--output", str(out),
            "--learning-snapshots", "2,5,30"]
    train.main([*args, "--run-dir", str(run), "--max-steps", "6"])
    shutil.rmtree(run)  # a new machine
    train.main([*args, "--run-dir", str(run), "--max-steps", "30", "--resume"])
    records = json.loads((out / "snapshots" / "snapshots.json").read_text())
    assert [r["step"] for r in records] == [2, 5, 30]
    assert {p.name for p in (out / "snapshots").glob("step_*")} == {f"step_{s:06d}.safetensors" for s in (2, 5, 30)}


def test_learning_snapshots_flag_rejects_what_is_not_steps(tmp_path):
    with pytest.raises(ValueError, match="learning-snapshots"):
        train.main([*TINY, "--run-dir", str(tmp_path / "r"), "--learning-snapshots", "10,ten"])


# ---------------------------------------------------------------------------- dropout sites

def test_attention_and_activation_dropout_default_to_dropout_and_can_be_switched_off():
    from transformer.config import ModelConfig
    from transformer.model import FeedForward, MultiHeadAttention

    def sites(**kw) -> set[tuple[str, float]]:
        model = Transformer(ModelConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                        n_encoder_layers=1, n_decoder_layers=1, dropout=0.1, **kw))
        return ({("attention", m.dropout) for m in model.modules() if isinstance(m, MultiHeadAttention)}
                | {("activation", m.dropout.p) for m in model.modules() if isinstance(m, FeedForward)}
                | {("residual", model.embed_dropout.p)})
    assert sites() == {("attention", 0.1), ("activation", 0.1), ("residual", 0.1)}
    assert sites(attention_dropout=0.0, activation_dropout=0.0) == {("attention", 0.0), ("activation", 0.0),
                                                                    ("residual", 0.1)}
    with pytest.raises(ValueError, match="attention_dropout"):
        ModelConfig(attention_dropout=1.5)
    assert ModelConfig.from_dict(ModelConfig().to_dict()) == ModelConfig()  # None round-trips through config.json


def test_training_attends_explicitly_on_a_cpu_with_the_same_result_as_sdpa():
    """Without dropout, the training path (explicit scores, masked softmax) equals inference's SDPA."""
    from transformer.config import ModelConfig

    torch.manual_seed(0)
    model = Transformer(ModelConfig(src_vocab_size=30, tgt_vocab_size=30, d_model=32, n_heads=4, d_ff=64,
                                    n_encoder_layers=2, n_decoder_layers=2, dropout=0.0))
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
    tgt = torch.tensor([[2, 11, 12, 13], [2, 14, 0, 0]])
    model.eval()
    with torch.no_grad():
        reference = model(src, tgt).logits
    model.train()
    with torch.no_grad():
        trained = model(src, tgt).logits
    torch.testing.assert_close(trained, reference, rtol=1e-5, atol=1e-5)
