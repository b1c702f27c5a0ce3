"""The app's start-up and configuration: torch's threads, the heap, the export folder (removed at exit), the
serving path measured for this CPU, the search process, then the `Explorer` over the checkpoints found.

`start_explorer` is what `app.create_app()` calls; nothing here runs at import.
"""
from __future__ import annotations

import atexit
import dataclasses
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
from transformer.quantize import PRECISIONS, int8_available
from transformer.serving.batching import Batcher
from transformer.serving.kernels import ServingPath, choose_serving_path, fastest_int8_kernels
from transformer.serving.search_process import SearchProcess, SearchProcessLost

from transformer.explorer.services import Explorer
from transformer.explorer.core.exports import EXPORT_DIR_PREFIX, remove_stale_export_dirs
from transformer.explorer.core.model_registry import ENV_CHECKPOINT, ModelRegistry

log = logging.getLogger(__name__)

ENV_SEARCH_PROCESS = "TRANSFORMER_SEARCH_PROCESS"  # 0: everyday searches stay in the app's process
ENV_PRECISION = "TRANSFORMER_PRECISION"  # int8 (the default where torch can) or fp32: the weights the search uses


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
    """How the search runs: the precision and int8 kernels `serving.kernels` measures fastest on this CPU for
    `config`'s shapes (default: `ModelConfig()`), unless `TRANSFORMER_PRECISION` (int8 or fp32) sets the
    precision (int8 still gets the measured kernels). The int8 kernels are set for this process
    (`quantize.use_int8_kernels`). `probe` is the measurement (tests pass timings of their own)."""
    value = os.environ.get(ENV_PRECISION, "").strip().lower()
    if value and value not in PRECISIONS:
        log.warning("%s=%r is not one of %s: the path is measured", ENV_PRECISION, value, PRECISIONS)
        value = ""
    if value == "int8" and not int8_available():
        log.warning("%s=int8, but this torch build has no quantised CPU kernels: using fp32", ENV_PRECISION)
        return ServingPath("fp32", reason="this torch build has no quantised CPU kernels")
    if value == "fp32":
        return ServingPath("fp32", reason=f"set by {ENV_PRECISION}")
    measured = probe(config or ModelConfig())
    if value == "int8":  # set by hand, whatever was measured fastest; the kernels are still the measured ones
        measured = dataclasses.replace(measured, precision="int8", kernels=fastest_int8_kernels(measured.layer_ms),
                                       reason=f"set by {ENV_PRECISION}")
    quantize.use_int8_kernels(dict(measured.kernels))
    return measured


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
    loaded in the precision `serving_choice` measures fastest, exports in a temporary directory of this process,
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
    log.info("serving path: %s search weights (%s); %s=int8|fp32 overrides", path.precision, path.why, ENV_PRECISION)
    searcher = search_process_from_env()
    explorer = Explorer(registry, export_dir, strict=bool(override), batcher=Batcher(searcher=searcher))
    explorer.models.serving_path = path
    return explorer
