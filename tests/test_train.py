"""Training: the model can learn, resuming (also after kill -9) is exact, and DDP keeps ranks in sync."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from transformer.training import train
from transformer.training.data import collate, toy_pairs
from transformer.training.evaluate import sequence_accuracy
from transformer.hub import load_checkpoint

REPO = Path(__file__).resolve().parents[1]

# A tiny reverse-task run: ~12 steps per epoch, dropout on so that restoring the RNG state matters.
TINY_RUN = [
    "--task", "reverse", "--toy-symbols", "10", "--toy-min-len", "3", "--toy-max-len", "8",
    "--toy-train-size", "300", "--toy-val-size", "20", "--d-model", "32", "--n-heads", "2",
    "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "64", "--dropout", "0.1",
    "--max-tokens", "256", "--lr", "3e-3", "--warmup-steps", "10", "--max-epochs", "100",
    "--seed", "7", "--val-batch-size", "32", "--no-progress", "--no-export",
    "--threads", "1",  # in-process and subprocess runs must use the same kernels to agree bit for bit
    "--precision", "fp32",  # and the same precision: "auto" times a matmul, and a loaded machine can choose apart
]
N_STEPS = 80  # about seven epochs


pytestmark = pytest.mark.slow  # training runs: `pytest -m "not slow"` leaves it out


def run_train(run_dir: Path, *extra: str) -> train.Trainer:
    """In-process `python -m transformer.train`."""
    return train.main([*TINY_RUN, "--run-dir", str(run_dir), *extra])


def load_state(run_dir: Path) -> dict:
    return torch.load(run_dir / "state.pt", map_location="cpu", weights_only=True)


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    different = [k for k in a if not torch.equal(a[k], b[k])]
    assert not different, f"tensors differ: {different[:5]}"


# ---------------------------------------------------------------------------- learning

def test_single_batch_overfits_to_near_zero_loss(make_model):
    model = make_model(seed=0, n_encoder_layers=1, n_decoder_layers=1)
    batch = collate(toy_pairs("reverse", 8, vocab_size=16, min_len=3, max_len=7, seed=0), pad_id=0, bos_id=2, eos_id=3)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    for _ in range(150):
        logits = model(batch.src, batch.tgt_in).logits
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"\n[overfit] loss {losses[0]:.3f} -> {losses[-1]:.5f}")
    assert losses[0] > 2.0
    assert losses[-1] < 0.01
    model.eval()
    assert (model(batch.src, batch.tgt_in).logits.argmax(-1) == batch.tgt_out)[batch.tgt_out != 0].all()


def test_cli_learns_reverse_task_and_exports_a_working_checkpoint(tmp_path):
    start = time.time()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "metrics.json").write_text('{"val/greedy": {"bleu": 99.0}}')  # an older model's scores
    trainer = train.main([
        "--task", "reverse", "--toy-symbols", "10", "--toy-min-len", "3", "--toy-max-len", "8",
        "--toy-train-size", "3000", "--toy-val-size", "100", "--d-model", "64", "--n-heads", "4",
        "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "128", "--dropout", "0",
        "--label-smoothing", "0", "--lr", "6e-3", "--warmup-steps", "60", "--schedule", "cosine",
        "--max-tokens", "512", "--max-epochs", "16", "--average-last", "1", "--no-half-precision",
        "--save-every", "100000", "--seed", "4", "--no-progress",
        "--run-dir", str(tmp_path / "run"), "--output", str(tmp_path / "out"),
    ])
    assert trainer.epoch == 16 and 500 < trainer.step < 700
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == list(range(1, 17))
    assert log[-1]["train_loss"] < log[0]["train_loss"] / 5
    model = load_checkpoint(tmp_path / "out")
    assert model.tokenizer.vocab_size == 14
    pairs = toy_pairs("reverse", 300, vocab_size=14, min_len=3, max_len=8, seed=999)  # fresh sequences
    acc = sequence_accuracy(model, pairs)
    print(f"\n[reverse] {trainer.step} steps in {time.time() - start:.1f}s: sequence accuracy "
          f"{acc['sequence_accuracy']:.3f}, token accuracy {acc['token_accuracy']:.3f}")
    assert acc["sequence_accuracy"] >= 0.95
    summary = json.loads((tmp_path / "out" / "training.json").read_text())
    assert summary["steps"] == trainer.step and summary["float16"] is False
    assert not (tmp_path / "out" / "metrics.json").exists()  # stale scores are not kept with new weights
    card = (tmp_path / "out" / "README.md").read_text()
    assert f"optimizer steps: {trainer.step}" in card and "No evaluation recorded yet" in card


def test_budget_stop_mid_epoch_keeps_the_final_weights_for_export(tmp_path):
    run_dir = tmp_path / "run"
    trainer = run_train(run_dir, "--max-steps", "30", "--average-last", "3", "--output", str(tmp_path / "out"))
    assert trainer.step == 30 and trainer.batch_in_epoch > 0  # stopped inside an epoch
    assert_same_weights(load_file(str(run_dir / "last.safetensors")), load_state(run_dir)["model"])
    summary = trainer.export()
    epochs = [int(p.stem.split("_")[1]) for p in sorted(run_dir.glob("epoch_*.safetensors"))][-2:]
    average = f"average of epoch {epochs[0]}, epoch {epochs[1]}, last step"
    assert set(summary["candidates"]) == {"best epoch", "last step (30)", average}
    assert summary["val_score"] == max(summary["candidates"].values())
    # Going on past the next epoch end: that epoch's file supersedes it, until the next budget stop.
    trainer = run_train(run_dir, "--resume", "--max-steps", "40")
    assert trainer.step == 40
    assert_same_weights(load_file(str(run_dir / "last.safetensors")), load_state(run_dir)["model"])


# ---------------------------------------------------------------------------- exact resume

@pytest.fixture(scope="module")
def straight_run(tmp_path_factory) -> dict:
    """Reference: N_STEPS steps in one go (crossing epoch boundaries)."""
    run_dir = tmp_path_factory.mktemp("straight")
    trainer = run_train(run_dir, "--max-steps", str(N_STEPS), "--save-every", "1000")
    assert trainer.step == N_STEPS and trainer.epoch >= 2  # the run crossed at least two epoch ends
    return load_state(run_dir)


def test_resume_half_way_gives_identical_weights(tmp_path, straight_run):
    run_dir = tmp_path / "halves"
    first = run_train(run_dir, "--max-steps", str(N_STEPS // 2), "--save-every", "1000")
    assert first.step == N_STEPS // 2 and first.batch_in_epoch > 0  # stopped mid-epoch
    half = load_state(run_dir)
    assert half["progress"]["step"] == N_STEPS // 2
    with pytest.raises(AssertionError):  # the comparison below can tell the two apart
        assert_same_weights(half["model"], straight_run["model"])
    second = run_train(run_dir, "--max-steps", str(N_STEPS), "--save-every", "1000", "--resume")
    assert second.step == N_STEPS
    final = load_state(run_dir)
    assert_same_weights(final["model"], straight_run["model"])
    assert final["progress"]["epoch"] == straight_run["progress"]["epoch"]
    for a, b in zip(final["optimizer"]["state"].values(), straight_run["optimizer"]["state"].values(), strict=True):
        assert torch.equal(a["exp_avg"], b["exp_avg"]) and torch.equal(a["exp_avg_sq"], b["exp_avg_sq"])


def test_resume_without_restoring_rng_would_differ(tmp_path, straight_run):
    """Guards the test above: with dropout on, a fresh RNG after the half-way point changes the weights."""
    run_dir = tmp_path / "fresh_rng"
    run_train(run_dir, "--max-steps", str(N_STEPS // 2), "--save-every", "1000")
    state = load_state(run_dir)
    state["rng"] = [{"torch": torch.manual_seed(12345).get_state(), "python": state["rng"][0]["python"]}]
    torch.save(state, run_dir / "state.pt")
    run_train(run_dir, "--max-steps", str(N_STEPS), "--save-every", "1000", "--resume")
    with pytest.raises(AssertionError):
        assert_same_weights(load_state(run_dir)["model"], straight_run["model"])


def test_stop_at_step_keeps_the_schedule_of_the_whole_run(tmp_path):
    """--stop-at-step halts a run part-way on the schedule of all its --max-steps (a 1,000-step comparison of
    the fast and reference paths stops where the shipped run's lr is, not at the end of a shorter cosine)."""
    cosine = ["--schedule", "cosine", "--max-steps", str(N_STEPS), "--save-every", "1000"]
    straight = run_train(tmp_path / "straight", *cosine)
    halted = run_train(tmp_path / "halted", *cosine, "--stop-at-step", str(N_STEPS // 2))
    assert halted.step == N_STEPS // 2
    lr_half = halted.scheduler.get_last_lr()[0]
    short = run_train(tmp_path / "short", "--schedule", "cosine", "--max-steps", str(N_STEPS // 2))
    assert lr_half > 10 * short.scheduler.get_last_lr()[0]  # a 40-step cosine has annealed to ~0 by now
    run_train(tmp_path / "halted", *cosine, "--resume")
    assert_same_weights(load_state(tmp_path / "halted")["model"], load_state(tmp_path / "straight")["model"])
    assert straight.step == N_STEPS


def test_exact_resume_keeps_the_precision_the_run_chose(tmp_path, caplog):
    """The automatic choice times a matmul; a resume must not switch a run's precision half-way."""
    run_dir = tmp_path / "run"
    first = run_train(run_dir, "--max-steps", "4", "--precision", "auto")
    state = load_state(run_dir)
    assert state["progress"]["autocast"] is first.autocast
    state["progress"]["autocast"] = not first.autocast  # as if this run had started on the other side of the choice
    torch.save(state, run_dir / "state.pt")
    with caplog.at_level("INFO", logger="transformer.training.trainer"):
        resumed = run_train(run_dir, "--max-steps", "6", "--precision", "auto", "--resume")
    assert resumed.autocast is (not first.autocast) and resumed.validate.autocast is resumed.autocast
    assert "as the run started" in caplog.text
    flag = run_train(run_dir, "--max-steps", "8", "--precision", "fp32", "--resume")  # the flag still wins
    assert flag.autocast is False and load_state(run_dir)["progress"]["autocast"] is False


def test_resume_refuses_a_different_model(tmp_path):
    run_dir = tmp_path / "other"
    run_train(run_dir, "--max-steps", "2", "--save-every", "1000")
    with pytest.raises(ValueError, match="model config differs"):
        run_train(run_dir, "--max-steps", "4", "--resume", "--d-model", "64")


def test_kill_9_then_resume_gives_identical_weights(tmp_path, straight_run):
    run_dir = tmp_path / "killed"
    cmd = [sys.executable, "-m", "transformer.train", *TINY_RUN, "--run-dir", str(run_dir),
           "--max-steps", str(N_STEPS), "--save-every", "1"]
    stderr = open(tmp_path / "stderr.txt", "wb")  # a file, not a pipe nobody drains
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)
    state_path = run_dir / "state.pt"
    seen_steps = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if state_path.exists():
                seen_steps.append(load_state(run_dir)["progress"]["step"])  # every snapshot must load
                if seen_steps[-1] >= 3:
                    break
            time.sleep(0.01)
        assert proc.poll() is None, "training ended before it could be killed: " + (
            tmp_path / "stderr.txt").read_text(errors="replace")[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
    killed_at = load_state(run_dir)["progress"]["step"]  # still loadable after the kill
    print(f"\n[kill] snapshots seen at steps {seen_steps}; state.pt after kill -9 at step {killed_at}")
    assert 3 <= killed_at < N_STEPS
    resumed = run_train(run_dir, "--max-steps", str(N_STEPS), "--save-every", "1", "--resume")
    assert resumed.step == N_STEPS
    assert_same_weights(load_state(run_dir)["model"], straight_run["model"])


# ---------------------------------------------------------------------------- DDP

@pytest.mark.timeout(300)
def test_ddp_two_processes_keep_identical_weights(tmp_path):
    out = tmp_path / "weights"
    out.mkdir()
    run_dir = tmp_path / "ddp_run"
    # --standalone: torchrun binds its rendezvous to a port it picks itself, so no other test's
    # server can take that port between our choosing it and torchrun binding it.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(REPO / "tests" / "ddp_worker.py"), str(out), *TINY_RUN, "--run-dir", str(run_dir),
           "--max-epochs", "2", "--save-every", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    result = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    init = [load_file(str(out / f"init_rank{r}.safetensors")) for r in range(2)]
    final = [load_file(str(out / f"final_rank{r}.safetensors")) for r in range(2)]
    assert_same_weights(init[0], init[1])
    assert_same_weights(final[0], final[1])
    changed = [k for k in final[0] if not torch.equal(final[0][k], init[0][k])]
    assert len(changed) > len(final[0]) // 2, "training should have moved the weights"
    # only rank 0 wrote files: one log line per epoch, and a resume state holding both ranks' RNG states
    log = (run_dir / "train_log.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in log] == [1, 2]
    state = load_state(run_dir)
    assert len(state["rng"]) == 2 and state["progress"]["epoch"] == 2
    assert_same_weights(state["model"], final[0])


def test_sigterm_stops_after_a_step_saves_and_resumes_exactly(tmp_path, straight_run):
    run_dir = tmp_path / "terminated"
    cmd = [sys.executable, "-m", "transformer.train", *TINY_RUN, "--run-dir", str(run_dir),
           "--max-steps", str(N_STEPS), "--save-every", "1000"]  # no periodic save: the stop itself must save
    stderr = open(tmp_path / "stderr.txt", "wb")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.time() + 120
        log_file = run_dir / "train_log.jsonl"
        while time.time() < deadline and proc.poll() is None and not log_file.exists():
            time.sleep(0.01)  # the first epoch's record: training is under way
        assert proc.poll() is None, (tmp_path / "stderr.txt").read_text(errors="replace")[-2000:]
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0  # a clean stop, not a death
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
    stopped_at = load_state(run_dir)["progress"]["step"]
    assert 0 < stopped_at < N_STEPS
    assert "stopping after this step" in (tmp_path / "stderr.txt").read_text(errors="replace")
    resumed = run_train(run_dir, "--max-steps", str(N_STEPS), "--save-every", "1000", "--resume")
    assert resumed.step == N_STEPS
    assert_same_weights(load_state(run_dir)["model"], straight_run["model"])
