"""The training loop: `Trainer` builds the model, optimizer and schedule, runs epochs of
token-bucketed batches (with gradient accumulation, clipping, bf16 autocast where it pays, a loss fused
with the output projection, and DDP), and at
every checkpoint validates, logs and snapshots. The data is `run_data.RunData`, the score
`validation.Validator`, the files `state.RunDirectory`, the final choice `export.export_run`.
"""
from __future__ import annotations

import collections
import json
import logging
import math
import os
import random
import time
from dataclasses import asdict, fields
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from transformer import heap
from transformer.config import ModelConfig
from transformer.hub import TIED_NAMES, load_weights_into, read_weights
from transformer.model import Transformer

from . import hardware, resume
from .config import TrainConfig
from .cuda_graphs import GraphedSteps
from .data import Batch
from .export import export_run
from .loss import alignment_loss, chunk_rows, linear_cross_entropy
from .run_data import RunData
from .state import Progress, RunDirectory
from .validation import Validator

log = logging.getLogger(__name__)

QUEUED_STEPS = 2  # optimizer steps the host may queue ahead of the GPU (`Trainer.bound_queue`)
# torch.compile inside the CUDA graphs makes a GPU's steps faster but takes longer to start: it repays that only on
# long runs (docs/model.md has the measured break-even).
COMPILE_PAYS_TOKENS = 300_000_000


def lr_factor(step: int, cfg: TrainConfig, total_steps: int) -> float:
    """Multiplier of the peak lr at optimizer step `step` (1-based)."""
    step = max(step, 1)
    if step < cfg.warmup_steps:
        return step / cfg.warmup_steps
    if cfg.schedule == "inverse_sqrt":  # the paper's schedule, normalised to peak at the end of warmup
        return math.sqrt(cfg.warmup_steps / step)
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, total_steps - cfg.warmup_steps))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def pick_device(cfg: TrainConfig, world: int) -> torch.device:
    """The configured device (auto: CUDA when there is one); starts the process group under torchrun."""
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device)
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def model_config(cfg: TrainConfig, data: RunData) -> ModelConfig:
    names = {f.name for f in fields(ModelConfig)}
    kwargs = {k: v for k, v in asdict(cfg).items() if k in names}
    t = data.tokenizer
    vocab = t.vocab_size + cfg.placeholders  # placeholder ids come after the tokenizer's
    return ModelConfig(**kwargs, src_vocab_size=vocab, tgt_vocab_size=vocab,
                       pad_id=t.pad_id, bos_id=t.bos_id, eos_id=t.eos_id, unk_id=t.unk_id)


def grown_vocabulary(weights: dict[str, torch.Tensor], config: ModelConfig) -> dict[str, torch.Tensor]:
    """Starting weights with embedding rows added for ids the checkpoint lacks (placeholders added when
    fine-tuning), drawn with the spread of the existing rows; every other tensor unchanged."""
    grown = dict(weights)
    for name in TIED_NAMES:
        old = grown.get(name)
        if old is not None and old.size(0) < config.src_vocab_size:
            extra = torch.randn(config.src_vocab_size - old.size(0), old.size(1), dtype=old.dtype, device=old.device)
            grown[name] = torch.cat([old, extra * old.float().std().to(old.dtype)])
    return grown


def make_optimizer(model: Transformer, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with no weight decay on biases and norms; fused (one kernel over all parameters, instead of a
    dozen passes over each) unless `cfg.fused` is off."""
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, fused=cfg.fused or None,
    )


def batch_loss(model: torch.nn.Module, batch: Batch, label_smoothing: float, bf16: bool, fused: bool,
               static_shape: bool = False) -> torch.Tensor:
    """Summed label-smoothed cross-entropy of one batch: `model` (a Transformer, or DDP around one) on
    src (B, S), tgt_in (B, T) against tgt_out (B, T), padding ignored.

    The fused path never forms the (B, T, V) logits (`loss.linear_cross_entropy`, only non-pad rows); the
    reference path (`fused=False`) is the loss as it was: float32 logits of every position, then `F.cross_entropy`.
    `static_shape=True` is the loss a CUDA graph records (`cuda_graphs.py`): nothing whose shape depends on the
    batch's values, and no autocast cache of cast weights (it would outlive the recording)."""
    return taught_batch_loss(model, batch, label_smoothing, bf16, fused, static_shape)[0]


def taught_batch_loss(model: torch.nn.Module, batch: Batch, label_smoothing: float, bf16: bool, fused: bool,
                      static_shape: bool = False, taught: tuple[int, int] | None = None,
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`batch_loss` and, with a `taught` (layer, head), 0-based, and `batch.alignment`, that cross-attention head's
    summed alignment loss against the batch's target weights (`loss.alignment_loss`); else None."""
    core = getattr(model, "module", model)
    pad, device_type = core.config.pad_id, batch.src.device.type
    teach = taught is not None and batch.alignment is not None
    with hardware.training_attention(batch.src.device), torch.autocast(
            device_type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False if static_shape else None):
        # the fused loss projects the hidden states itself; a taught head's weights only when there is one
        out = model(batch.src, batch.tgt_in, project=not fused, output_attentions=teach)
    aligned = alignment_loss(out.attention.cross[taught[0]][:, taught[1]], batch.alignment) if teach else None
    if fused:
        return linear_cross_entropy(out.hidden, core.generator.weight, batch.tgt_out, pad, label_smoothing,
                                    torch.bfloat16 if bf16 else torch.float32, chunk_rows(batch.src.device),
                                    static_shape=static_shape), aligned
    return F.cross_entropy(out.logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=pad,
                           label_smoothing=label_smoothing, reduction="sum"), aligned


def compile_choice(cfg: TrainConfig, steps_per_epoch: int) -> tuple[bool, str]:
    """Whether to compile the model inside the CUDA graphs, and why: --compile on/off as given; auto where the run
    plans at least `COMPILE_PAYS_TOKENS` (padded) tokens, enough to repay a minute of compiling."""
    if cfg.compile != "auto":
        return cfg.compile == "on", f"--compile {cfg.compile}"
    steps = min(x for x in (cfg.max_steps or cfg.max_epochs * steps_per_epoch, cfg.stop_at_step) if x)
    planned = steps * cfg.max_tokens * cfg.accum_steps
    pays = planned >= COMPILE_PAYS_TOKENS
    return pays, (f"auto: the run plans {planned / 1e6:.0f}M tokens, {'at least' if pays else 'under'} the "
                  f"{COMPILE_PAYS_TOKENS / 1e6:.0f}M past which compiling pays; --compile on|off decides")


class Trainer:
    def __init__(self, cfg: TrainConfig, resume: bool = False):
        self.cfg = cfg
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = pick_device(cfg, self.world)
        if self.device.type == "cpu":
            heap.keep()  # each step reuses the last one's pages instead of faulting in fresh ones (heap.py)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.run = RunDirectory(cfg.run_dir, keep_last=max(cfg.keep_last, cfg.average_last))
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        self.data = RunData(cfg, self.run.path, resume, self.is_main, self.rank, self.world)
        self.tokenizer = self.data.tokenizer
        self.model = Transformer(model_config(cfg, self.data)).to(self.device)
        self.ddp = (torch.nn.parallel.DistributedDataParallel(
            self.model, device_ids=[self.device] if self.device.type == "cuda" else None) if self.world > 1 else None)
        self.hardware = hardware.detect(self.device)
        self.autocast = hardware.use_bf16(cfg.precision, self.hardware)
        self.validate = Validator(self.tokenizer, self.data.val_sets, self.data.val_refs, self.device,
                                  cfg.max_tokens, cfg.val_batch_size, self.autocast)
        if cfg.init_from:  # fine-tuning: the starting weights; a resume state replaces them later
            weights = read_weights(Path(cfg.init_from), str(self.device))
            load_weights_into(self.model, grown_vocabulary(weights, self.model.config), Path(cfg.init_from))
        self.progress = Progress(autocast=self.autocast)  # restored by --resume
        self.pending_losses: list[torch.Tensor] = []  # batch losses not yet added to progress.epoch_loss
        self.pending_alignment: list[torch.Tensor] = []  # a taught head's batch alignment losses, not yet logged
        self.pending_tokens: list[int] = []  # the target tokens of those batches
        self.clock = (0, 0.0)  # target tokens and seconds of this process's training steps: the logged tokens/s
        self.steps_per_epoch = len(self.data.epoch_batches(0)) // cfg.accum_steps
        self.optimizer, self.scheduler = self._optimizer()
        self.graphs = self._graphed_steps()
        self.queued: collections.deque[torch.cuda.Event] = collections.deque()  # `bound_queue`
        self.stop_requested = False  # set by SIGTERM/SIGINT: stop after this step as if the budget ran out

    def _optimizer(self) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
        """AdamW and the lr schedule, re-warmed after a continuation."""
        cfg = self.cfg
        optimizer = make_optimizer(self.model, cfg)
        total = cfg.max_steps or cfg.max_epochs * self.steps_per_epoch

        def factor(s: int) -> float:
            rewarm = self.progress.rewarm_from
            return lr_factor(s + 1, cfg, total) * (min(1.0, (s + 1 - rewarm) / resume.REWARM_STEPS) if rewarm else 1.0)

        return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    def _graphed_steps(self) -> GraphedSteps | None:
        """CUDA graphs for the micro-batches (`cuda_graphs.py`) on a single GPU, unless --cuda-graphs off; inside them
        the model compiled by torch.compile (inductor fuses the small kernels the graphs replay) with --compile on,
        or with auto where the run is long enough to repay the compiling (`COMPILE_PAYS_TOKENS`); both logged."""
        cfg = self.cfg
        possible = self.device.type == "cuda" and self.world == 1 and not cfg.align_layer  # graphs: no maps out
        if cfg.cuda_graphs == "on" and not possible:
            raise ValueError(f"--cuda-graphs on needs one CUDA device and one process, not {self.device} "
                             f"in {self.world} process(es)")
        use = possible and cfg.cuda_graphs != "off"
        if cfg.compile == "on" and not use:
            raise ValueError("--compile on compiles the model inside the CUDA graphs, which need one CUDA device, "
                             "one process and --cuda-graphs auto or on")
        if not use:
            if self.device.type == "cuda":
                log.info("training steps run eagerly (%s)", "--cuda-graphs off" if possible else "several processes")
            return None
        compiled, why = compile_choice(cfg, self.steps_per_epoch)
        log.info("training steps run as CUDA graphs, one per padded batch shape (--cuda-graphs off: eagerly), of the "
                 "model %s (%s)", "compiled by torch.compile, dynamic shapes: the first shapes take a minute"
                 if compiled else "as it is, not compiled", why)
        return self.graphed_steps(torch.compile(self.model, dynamic=True) if compiled else self.model)

    def graphed_steps(self, model: torch.nn.Module, record: bool = True) -> GraphedSteps:
        """The micro-batches' padded static-shape steps of `model`; `record=False` runs them eagerly (tests)."""
        cfg = self.cfg
        return GraphedSteps(model, lambda m, batch: batch_loss(
            m, batch, cfg.label_smoothing, self.autocast, cfg.fused, static_shape=True), cfg.accum_steps, record)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def step(self) -> int:
        return self.progress.step

    @property
    def epoch(self) -> int:
        return self.progress.epoch

    @property
    def batch_in_epoch(self) -> int:
        return self.progress.batch_in_epoch

    # -- resume (resume.py) ----------------------------------------------------

    def save_state(self) -> None:
        self.fold_losses()
        resume.save_state(self.run, self.parts(), asdict(self.cfg), self.world, self.is_main)

    def load_state(self) -> bool:
        """Resume exactly from RUN_DIR/state.pt, else continue from the export; False if neither exists."""
        chosen = self.autocast
        if resume.load_state(self.run, self.parts(), self.device, self.rank, self.world):
            self.keep_precision(chosen)
            return True
        self.progress.autocast = chosen
        return resume.continue_from_export(self.run, self.parts(), self.cfg.output, self.device, self.is_main)

    def keep_precision(self, chosen: bool) -> None:
        """An exact resume trains in the precision the run chose at its start, unless --precision says otherwise:
        the automatic choice times a matmul, and a busy machine must not switch a run's precision half-way."""
        saved = self.progress.autocast
        if self.cfg.precision == "auto" and saved is not None and saved != chosen:
            log.info("resuming in %s, as the run started (--precision overrides)", "bf16 autocast" if saved else "float32")
            self.autocast = self.validate.autocast = saved
        else:
            self.progress.autocast = chosen

    def parts(self) -> resume.TrainingParts:
        return resume.TrainingParts(self.model, self.optimizer, self.scheduler, self.progress)

    # -- training ------------------------------------------------------------

    @property
    def taught(self) -> tuple[int, int] | None:
        """The taught head's (layer, head), 0-based (`--align-layer`, `--align-head`); None when none is."""
        return (self.cfg.align_layer - 1, self.cfg.align_head - 1) if self.cfg.align_layer else None

    def losses_on(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Summed label-smoothed cross-entropy of one batch (the caller divides by the token count), and the taught
        head's summed alignment loss (None where no head is taught)."""
        return taught_batch_loss(self.ddp or self.model, batch, self.cfg.label_smoothing, self.autocast,
                                 self.cfg.fused, taught=self.taught)

    def out_of_budget(self) -> bool:
        cfg, p = self.cfg, self.progress
        return bool((cfg.max_steps and p.step >= cfg.max_steps)
                    or (cfg.stop_at_step and p.step >= cfg.stop_at_step)
                    or (cfg.max_minutes and p.train_seconds >= cfg.max_minutes * 60)
                    or (cfg.val_every and cfg.patience and p.bad_epochs >= cfg.patience)
                    or self.stop_requested)

    def optimizer_step(self, batches: list[list[int]]) -> int:
        """One optimizer step over `accum_steps` batches of the epoch; returns the target tokens seen."""
        p, t, tokens = self.progress, self.tokenizer, 0
        if self.graphs:
            self.graphs.zero_grad()  # in place: the graphs add to these tensors
        else:
            self.optimizer.zero_grad(set_to_none=True)
        for _ in range(self.cfg.accum_steps):
            batch = self.data.train_set.make_batch(batches[p.batch_in_epoch], t.pad_id, t.bos_id, t.eos_id)
            if self.taught is not None:
                batch.alignment = self.data.taught_alignment(batch, batches[p.batch_in_epoch])
            if self.graphs:
                loss = self.graphs.accumulate(batch)
            else:
                batch = batch.to(self.device)
                loss, aligned = self.losses_on(batch)
                objective = loss if aligned is None else loss + self.cfg.align_weight * aligned
                (objective / (batch.n_tokens * self.cfg.accum_steps)).backward()
                if aligned is not None:
                    self.pending_alignment.append(aligned.detach())
                    self.pending_tokens.append(batch.n_tokens)
            self.pending_losses.append(loss.detach())  # read later, in one transfer: no wait for the GPU here
            p.epoch_tokens += batch.n_tokens
            tokens += batch.n_tokens
            p.batch_in_epoch += 1
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm)
        self.optimizer.step()
        self.scheduler.step()
        p.step += 1
        self.bound_queue()
        return tokens

    def bound_queue(self) -> None:
        """On a GPU, let the host run at most `QUEUED_STEPS` optimizer steps ahead of the GPU: enough to build the
        next batches while the GPU works, few enough that a step's measured time is the GPU's (and that pinned
        batches and pending losses do not pile up)."""
        if self.device.type == "cuda":
            self.queued.append(torch.cuda.Event())
            self.queued[-1].record()
            if len(self.queued) > QUEUED_STEPS:
                self.queued.popleft().synchronize()

    def fold_losses(self) -> None:
        """Add the batch losses not yet read into `progress.epoch_loss`, one by one in batch order (the sum a
        per-batch `.item()` gave), with a single device-to-host copy: on a GPU the host never waits per batch."""
        if self.pending_losses:
            for value in torch.stack(self.pending_losses).tolist():
                self.progress.epoch_loss += value
            self.pending_losses.clear()

    def alignment_since(self) -> dict[str, float]:
        """The taught head's alignment loss per target token since the last call (empty when none is taught): the
        mean cross-entropy of its rows against eflomal's links."""
        if not self.pending_alignment:
            return {}
        total, tokens = sum(torch.stack(self.pending_alignment).tolist()), sum(self.pending_tokens)
        self.pending_alignment.clear()
        self.pending_tokens.clear()
        return {"align_loss": round(total / max(tokens, 1), 4)}

    def _status(self, tokens: int, seconds: float) -> dict[str, str]:
        self.fold_losses()
        mean = self.progress.epoch_loss / max(self.progress.epoch_tokens, 1)
        aligned = {k: f"{v:.3f}" for k, v in self.alignment_since().items()}
        return dict(loss=f"{mean:.3f}", ppl=f"{math.exp(min(mean, 50)):.1f}", **aligned,
                    tok_s=f"{tokens * self.world / seconds:.0f}", lr=f"{self.scheduler.get_last_lr()[0]:.2e}")

    def train_epoch(self) -> bool:
        """Train to the end of the epoch; False if a step or time budget stopped it first."""
        cfg, p = self.cfg, self.progress
        batches = self.data.epoch_batches(p.epoch)
        self.epoch_length = len(batches)
        (self.ddp or self.model).train()
        bar = tqdm(total=len(batches), initial=p.batch_in_epoch, desc=f"epoch {p.epoch + 1}",
                   disable=not (cfg.progress and self.is_main), dynamic_ncols=True, mininterval=2.0)
        t_last, tokens_since = time.time(), 0
        while p.batch_in_epoch < len(batches):
            if self.out_of_budget():
                bar.close()
                return False
            t0 = time.time()
            tokens = self.optimizer_step(batches)
            seconds = time.time() - t0
            tokens_since += tokens
            p.train_seconds += seconds
            self.clock = (self.clock[0] + tokens, self.clock[1] + seconds)
            bar.update(cfg.accum_steps)
            if time.time() - t_last > (2.0 if bar.disable is False else 120.0):
                status = self._status(tokens_since, time.time() - t_last)
                bar.set_postfix(**status)
                if bar.disable and self.is_main:  # no progress bar (a log file): a line every two minutes
                    log.info("step %d: %s", p.step, " ".join(f"{k}={v}" for k, v in status.items()))
                t_last, tokens_since = time.time(), 0
            if cfg.val_every and p.step % cfg.val_every == 0:
                self.checkpoint(f"step_{p.step:06d}")
                (self.ddp or self.model).train()
            if p.step in cfg.snapshot_steps:
                self.learning_snapshot()
            if p.step % cfg.save_every == 0 or (cfg.val_every and p.step % cfg.val_every == 0):
                self.save_state()
        bar.close()
        return True

    # -- validation, snapshots and selection ---------------------------------

    def checkpoint(self, snapshot: str) -> bool:
        """Validate, log, save the weights as RUN_DIR/<snapshot>.safetensors (keeping the newest
        few); True if validation has not improved for `patience` checkpoints."""
        p, stop = self.progress, False
        self.fold_losses()
        if self.is_main:
            metrics = self.validate(self.model)
            mean = p.epoch_loss / max(p.epoch_tokens, 1)
            epoch = p.epoch + p.batch_in_epoch / max(getattr(self, "epoch_length", 0), 1)
            record = {"epoch": round(epoch, 3) if epoch % 1 else int(epoch), "step": p.step,
                      "train_loss": round(mean, 4), "train_ppl": round(math.exp(min(mean, 50)), 3),
                      "lr": self.scheduler.get_last_lr()[0], "train_minutes": round(p.train_seconds / 60, 2),
                      "tokens_per_s": round(self.clock[0] / max(self.clock[1], 1e-9)), **self.alignment_since(),
                      **({"cuda_graph_shapes": len(self.graphs.shapes),  # recording time is in tokens_per_s
                          "cuda_graph_record_s": round(self.graphs.record_seconds, 1)} if self.graphs else {}),
                      **metrics}
            self.run.append_log(record)
            log.info("%s: %s", snapshot, json.dumps(record))
            improved = metrics["score"] > p.best_score
            self.run.save_snapshot(snapshot, dict(self.model.state_dict()), best=improved)
            p.best_score, p.bad_epochs = (metrics["score"], 0) if improved else (p.best_score, p.bad_epochs + 1)
            stop = bool(self.cfg.patience and p.bad_epochs >= self.cfg.patience)
        if self.world > 1:
            flag = [stop, p.bad_epochs]
            dist.broadcast_object_list(flag, src=0)
            stop, p.bad_epochs = flag
        p.epoch_loss, p.epoch_tokens = 0.0, 0  # the next record's training loss starts here
        return stop

    def learning_snapshot(self) -> None:
        """Keep this step's weights in float16 with their validation scores (`--learning-snapshots`)."""
        if self.is_main:
            p = self.progress
            metrics = self.validate(self.model)
            epoch = p.epoch + p.batch_in_epoch / max(getattr(self, "epoch_length", 0), 1)
            self.run.save_learning_snapshot({"step": p.step, "epoch": round(epoch, 3), **metrics},
                                            dict(self.model.state_dict()))
            log.info("learning snapshot at step %d: %s", p.step, json.dumps(metrics))
            (self.ddp or self.model).train()

    def end_epoch(self) -> bool:
        """Checkpoint at the epoch's end (unless checkpoints go by steps); True to stop early."""
        stop = False if self.cfg.val_every else self.checkpoint(f"epoch_{self.epoch + 1:03d}")
        self.progress.epoch += 1
        self.progress.batch_in_epoch = 0
        self.save_state()
        return stop

    def request_stop(self, signum: int, _frame: object = None) -> None:
        """Signal handler: finish the current step, save, and export, instead of dying mid-step."""
        log.warning("signal %d: stopping after this step (state and weights are saved; export follows)", signum)
        self.stop_requested = True

    def fit(self) -> None:
        while self.epoch < self.cfg.max_epochs:
            if not self.train_epoch():
                log.info("budget reached at step %d", self.step)
                self.save_state()
                if self.is_main:
                    self.run.save_last(self.step, self.model.state_dict())
                return
            if self.end_epoch():
                log.info("early stopping after epoch %d", self.epoch)
                return

    def export(self) -> dict:
        """Choose the final model on validation and write it to --output (`export.export_run`)."""
        return export_run(self.run, self.cfg, self.model, self.tokenizer, self.validate, self.progress, self.world,
                          truecaser=self.data.truecaser, copied_words=self.data.copied_words)
