"""Helper for tests/test_train.py, run under torchrun: DDP training on CPU (gloo) that records weights.

    python -m torch.distributed.run --nproc_per_node 2 tests/ddp_worker.py OUT_DIR [train flags...]

Does what `transformer.train.main` does (Trainer, fit, export on rank 0), and additionally writes this
rank's weights before and after training to OUT_DIR/{init,final}_rank{RANK}.safetensors.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch.distributed as dist
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for `transformer`

from transformer.training.train import Trainer, parse_args  # noqa: E402


def dump(trainer: Trainer, out: Path, name: str) -> None:
    weights = {k: v.detach().cpu().clone().contiguous() for k, v in trainer.model.state_dict().items()}
    save_file(weights, str(out / f"{name}_rank{trainer.rank}.safetensors"))


def main() -> None:
    out = Path(sys.argv[1])
    cfg, resume, export = parse_args(sys.argv[2:])
    trainer = Trainer(cfg)
    assert trainer.world == 2 and trainer.ddp is not None, "expected two DDP processes"
    dump(trainer, out, "init")
    if resume:
        trainer.load_state()
    trainer.fit()
    dump(trainer, out, "final")
    if export and cfg.output and trainer.is_main:
        trainer.export()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
