"""Training: `python -m transformer.train --preset en-de` (or de-en, multi30k-en-de, toy-reverse, toy-copy, toy-sort).

Every flag maps onto a `TrainConfig` field; a preset fills in the recipe of a
shipped checkpoint and any flag given after it overrides. A run directory
holds the resume state (`state.pt`), per-epoch weights and `train_log.jsonl`;
`--resume` continues exactly where the last save left off. The finished model
is exported to `--output` in the Hugging Face layout. Runs under
`torchrun --nproc_per_node N` with DistributedDataParallel as well.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from dataclasses import fields

import torch.distributed as dist

from .config import PRESETS, TrainConfig
from .data import DataError
from .trainer import Trainer

log = logging.getLogger(__name__)


def parse_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool, bool]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), help="a shipped checkpoint's recipe")
    p.add_argument("--resume", action="store_true", help="continue from RUN_DIR/state.pt")
    p.add_argument("--no-export", action="store_true", help="do not export to --output at the end")
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        elif f.name == "corpora":
            p.add_argument("--corpus", dest="corpora", action="append", default=None, metavar="NAME[:WEIGHT][=PATH]",
                           help="a training corpus, once per corpus (e.g. --corpus tatoeba-en-de --corpus multi30k:2)")
        else:
            kind = {"int": int, "float": float, "float | None": float}.get(str(f.type), str)
            p.add_argument(flag, type=kind, default=None)
    args = p.parse_args(argv)
    values = dict(PRESETS[args.preset]) if args.preset else {}
    values.update({f.name: getattr(args, f.name) for f in fields(TrainConfig) if getattr(args, f.name) is not None})
    values["corpora"] = tuple(values.get("corpora", ()))
    return TrainConfig(**values), args.resume, not args.no_export


def main(argv: list[str] | None = None) -> Trainer:
    cfg, resume, export = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    trainer = Trainer(cfg, resume=resume)
    if resume:
        trainer.load_state()
    if threading.current_thread() is threading.main_thread():  # signal handlers only live there
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, trainer.request_stop)
    if trainer.is_main:
        log.info("model: %d parameters; %d training pairs (%s); %d steps per epoch on %s",
                 trainer.model.num_parameters(), sum(trainer.data.corpus_sizes),
                 ", ".join(c.name for c in trainer.data.corpora) or cfg.task, trainer.steps_per_epoch, trainer.device)
    trainer.fit()
    if export and cfg.output and trainer.is_main:
        trainer.export()
    if trainer.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return trainer


def cli() -> None:
    """The command line: errors the user can fix are one line, not a traceback."""
    try:
        main()
    except (DataError, ValueError) as err:  # a missing corpus, a bad --corpus, a foreign run directory: one line
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    cli()
