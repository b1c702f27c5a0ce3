"""The served search of a class's batch: beam 5 over 1, 8 and 30 of our names-and-numbers sentences (varied
lengths, as a class types them), ms per sentence, on the app's serving path and one torch thread.

The sentences are encoded one by one and padded to their bucket as the app's batcher does (`stack_encoded`), then
searched together (`beam_search`, the int8 search model with the start-up probe's kernels). `--compare DIR` also
times the search of another checkout (its `transformer` package, loaded under another name, with its own search
model and encoder), interleaved with this one's, and says whether both give the same n-best bits: a before/after
of a change to the search in one process, on the same machine state.

    python bench/batched_search.py --repeats 10 --json bench/results/batched_search.json
    python bench/batched_search.py --repeats 10 --compare ../before    # a checkout of the commit before
"""
from __future__ import annotations

import argparse
import importlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

SIZES = (1, 8, 30)


def other_package(checkout: Path) -> str:
    """The name under which the `transformer` package of the checkout `checkout` is imported (a copy in a temporary
    directory, so that both versions live in one process)."""
    where = Path(tempfile.mkdtemp(prefix="compared-"))
    shutil.copytree(checkout / "transformer", where / "transformer_compared",
                    ignore=shutil.ignore_patterns("__pycache__", "static"))
    sys.path.insert(0, str(where))
    return "transformer_compared"


def prepared_search(package: str, checkpoint: str, kernels: dict, texts: list[str], size: int):
    """A function that runs `package`'s beam 5 over the first `size` texts, encoded and padded as the batcher does,
    on `package`'s own int8 search model, and returns the n-best lists."""
    import torch

    decoding = importlib.import_module(f"{package}.decoding")
    importlib.import_module(f"{package}.quantize").use_int8_kernels(kernels)
    tr = importlib.import_module(f"{package}.translator").load_pretrained(checkpoint, quantize="int8")
    model = tr.search_model
    ids = [tr.source(t).ids for t in texts[:size]]
    parts = [decoding.encode_source(model, torch.tensor([i])) for i in ids]
    src, encoded = decoding.stack_encoded(parts, ids, model.config.pad_id, decoding.source_bucket(max(map(len, ids))))
    return lambda: decoding.beam_search(model, src, 5, 0.6, encoded=encoded)


def commit(checkout: Path) -> str | None:
    """The commit a checkout is at (its first 7 hex digits), or None outside git."""
    import subprocess

    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--compare", help="another checkout whose beam_search is timed beside this one's")
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from transformer.hub import read_config
    from transformer.serving.kernels import choose_serving_path

    path = choose_serving_path(read_config(Path(args.checkpoint)))
    if path.precision != "int8":
        sys.exit(f"this CPU serves {path.precision}; the bench times the int8 search")
    rows = (ROOT / "tests" / "data" / "names_numbers.tsv").read_text(encoding="utf-8").splitlines()
    texts = [row.split("\t")[0] for row in rows if row and not row.startswith("#")]
    packages = {"this": "transformer"} | ({"compared": other_package(Path(args.compare).resolve())}
                                         if args.compare else {})
    out: dict = {"precision": path.precision, "beam": 5, "cpu_threads": 1, "compared": args.compare or None,
                 "commits": {"this": commit(ROOT), "compared": commit(Path(args.compare)) if args.compare else None}}
    with torch.inference_mode():
        for size in SIZES:
            searches = {name: prepared_search(package, args.checkpoint, dict(path.kernels), texts, size)
                        for name, package in packages.items()}
            results = {name: search() for name, search in searches.items()}
            times: dict[str, list[float]] = {name: [] for name in searches}
            for _ in range(args.repeats):
                for name, search in searches.items():
                    start = time.perf_counter()
                    search()
                    times[name].append(time.perf_counter() - start)
            row = {f"{name}_ms_per_sentence": round(statistics.median(t) * 1000 / size, 2) for name, t in times.items()}
            if args.compare:
                same = [[(h.tokens, h.log_prob, h.score) for h in hyps] for hyps in results["this"]] == [
                    [(h.tokens, h.log_prob, h.score) for h in hyps] for hyps in results["compared"]]
                row |= {"compared_over_this": round(statistics.median(times["compared"]) /
                                                    statistics.median(times["this"]), 2), "same_nbest": same}
            out[f"batch_{size}"] = row
    print(json.dumps(out))
    if args.json:
        from report import write_result

        write_result(args.json, out)


if __name__ == "__main__":
    main()
