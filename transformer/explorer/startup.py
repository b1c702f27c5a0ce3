"""The app's start-up and configuration: torch's threads, the heap, the export folder (removed at exit), the
serving path measured for this CPU, the search process, then the `Explorer` over the checkpoints found.

`start_explorer` is what `app.create_app()` calls; nothing here runs at import.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch

from transformer import heap, quantize
from transformer.config import ModelConfig
from transformer.hub import read_config
from transformer.quantize import INT8_KERNELS, kernels_for
from transformer.serving.batching import Batcher
from transformer.serving.kernels import ServingPath, choose_serving_path, step_linears
from transformer.serving.search_process import SearchProcess, SearchProcessLost

from transformer.explorer.services import Explorer
from transformer.explorer.core.exports import EXPORT_DIR_PREFIX, remove_stale_export_dirs
from transformer.explorer.core.model_registry import ENV_CHECKPOINT, ModelRegistry

log = logging.getLogger(__name__)

ENV_SEARCH_PROCESS = "TRANSFORMER_SEARCH_PROCESS"  # 0: everyday searches stay in the app's process
ENV_KERNEL = "TRANSFORMER_INT8_KERNEL"  # int_mm, packed or float: every layer on that kernel (the same bits, another speed)
RETIRED_PRECISION = "TRANSFORMER_PRECISION"  # no longer read: the search has one arithmetic, int8, on every CPU


def torch_threads(cores: int | None = None) -> int:
    """torch threads for the model: every core but one, at least one; `TRANSFORMER_THREADS` overrides.

    The core left over runs Gradio's threads and, where the app runs on the machine the page is seen on (a laptop,
    a classroom's computer), the browser: a translation is drawn sooner so, and a class's burst is served as fast
    (docs/deploy.md)."""
    value = os.environ.get("TRANSFORMER_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    cores = (os.cpu_count() or 1) if cores is None else cores
    return max(1, cores - 1)


def search_process_from_env(python: str = sys.executable) -> SearchProcess | None:
    """The app's search process (`transformer.serving.search_process`), started now on torch's threads (`python`
    runs it), unless `TRANSFORMER_SEARCH_PROCESS` is 0; a child that cannot start now is tried again later
    (`SearchProcess`'s backoff), its searches run in the app meanwhile. Its searches wait neither for the
    app's GIL nor on its heap, for the memory of a second copy of the model (docs/serving.md has why and the
    measurements, docs/deploy.md the memory)."""
    if os.environ.get(ENV_SEARCH_PROCESS, "").strip() == "0":
        log.info("searches run in the app's process (%s=0)", ENV_SEARCH_PROCESS)
        return None
    if os.name != "posix":  # the child's pipes are inherited file descriptors
        log.info("searches run in the app's process (no search process on %s)", os.name)
        return None
    searcher = SearchProcess(threads=torch.get_num_threads(), python=python)
    try:
        searcher.start()  # it imports torch while this process loads the model
    except SearchProcessLost as err:
        log.error("could not start the search process (%s): searches run in the app's process until it "
                  "starts", err)
    atexit.register(searcher.close)
    return searcher


def serving_choice(config: ModelConfig | None = None, probe=choose_serving_path) -> ServingPath:
    """Which int8 kernel computes each of the search's layers: the fastest `serving.kernels` measures on this CPU for
    `config`'s shapes (default: `ModelConfig()`), unless `TRANSFORMER_INT8_KERNEL` names one for every layer (where
    it can compute the layer's shape). Either way the search computes the same bits. The kernels are set for this
    process (`quantize.use_int8_kernels`). `probe` is the measurement (tests pass timings of their own)."""
    config = config or ModelConfig()
    if os.environ.get(RETIRED_PRECISION, "").strip():
        log.warning("%s is no longer read: the search runs int8 arithmetic on every computer, so a link shows "
                    "the same translation everywhere (%s chooses a kernel)", RETIRED_PRECISION, ENV_KERNEL)
    value = os.environ.get(ENV_KERNEL, "").strip().lower()
    if value and value not in INT8_KERNELS:
        log.warning("%s=%r is not one of %s: the kernels are measured", ENV_KERNEL, value, INT8_KERNELS)
        value = ""
    if value:
        shapes = [(lin.in_features, lin.out_features) for lin in step_linears(config)]
        kernels = tuple((shape, value if value in kernels_for(shape[0]) else "int_mm") for shape in shapes)
        chosen = ServingPath("int8", kernels, reason=f"kernel set by {ENV_KERNEL}")
    else:
        chosen = probe(config)
    quantize.use_int8_kernels(dict(chosen.kernels))
    return chosen


def default_model_config(registry: ModelRegistry) -> ModelConfig | None:
    """The default model's configuration, read without loading it (None where there is no local one)."""
    directory = registry.directory(registry.default()) if registry.default() else None
    try:
        return read_config(directory) if directory is not None else None
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("could not read %s's configuration for the serving probe: %s", directory, err)
        return None


def start_explorer(checkpoint_dir: Path) -> Explorer:
    """The app's explorer: the checkpoints under `checkpoint_dir` (and $TRANSFORMER_CHECKPOINT first, if set),
    searched in int8 on the kernels `serving_choice` measures fastest, exports in a temporary directory of this process,
    torch on every core but one (`torch_threads`)."""
    torch.set_num_threads(torch_threads())
    log.info("torch threads: %d of %d cores (TRANSFORMER_THREADS overrides); OpenMP spin count %s",
             torch.get_num_threads(), os.cpu_count() or 1, os.environ.get("GOMP_SPINCOUNT", "libgomp's default"))
    heap.give_back()  # results' arrays freed are given back to the system (heap.py)
    override = os.environ.get(ENV_CHECKPOINT)
    export_dir = Path(tempfile.gettempdir()) / f"{EXPORT_DIR_PREFIX}{os.getpid()}"
    for stale in remove_stale_export_dirs(export_dir.parent, os.getpid()):
        log.info("removed %s, left by an app that is no longer running", stale)
    atexit.register(shutil.rmtree, export_dir, ignore_errors=True)  # this app's exports go with it
    registry = ModelRegistry(checkpoint_dir, override)
    path = serving_choice(default_model_config(registry))
    registry.precision = path.precision
    log.info("serving path: int8 search (%s); %s=%s overrides", path.why, ENV_KERNEL, "|".join(INT8_KERNELS))
    searcher = search_process_from_env()
    explorer = Explorer(registry, export_dir, strict=bool(override), batcher=Batcher(searcher=searcher))
    explorer.models.serving_path = path
    return explorer
