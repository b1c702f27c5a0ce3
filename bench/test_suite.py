"""The test suite's wall time: the whole suite (`python -m pytest -q`, the README's command) and the fast set
(`-m "not slow"`), each module's time, and the CPU time of every process the run started.

Runs pytest in a child process in `--root` (a checkout; default this one) and records its wall time, the tests
passed and skipped, the machine's load average when it started (other work on a shared machine slows a run) and
the CPU seconds of the whole process tree (workers, app servers, Chromium), read from /proc while it runs. Each
module's time is the sum of its tests' times (set-up, call and tear-down) from pytest's JUnit XML: with two
workers, the modules' times add up to about twice the wall time.

Usage: python bench/test_suite.py [--root DIR --label TEXT] [--sets whole,fast] [--json PATH]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import write_result  # noqa: E402  (bench/, the script's own directory)

SETS = {"whole": [], "fast": ["-m", "not slow"]}
TICKS = os.sysconf("SC_CLK_TCK")


def process_table() -> dict[int, tuple[int, int, int]]:
    """Every process: pid -> (parent pid, start time, user + system CPU ticks)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry)] = (int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12]))
    return table


def run_timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run `command`: (wall seconds, CPU seconds of its process tree sampled every 0.25 s, its output)."""
    start = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as out:
        child = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        tree, ticks = {child.pid}, {}
        while child.poll() is None:
            table = process_table()
            grown = True
            while grown:  # descendants whose parent is in the tree
                new = {pid for pid, (parent, _, _) in table.items() if parent in tree and pid not in tree}
                tree |= new
                grown = bool(new)
            for pid in tree & table.keys():
                _, started, used = table[pid]
                ticks[(pid, started)] = max(ticks.get((pid, started), 0), used)
            time.sleep(0.25)
        wall = time.monotonic() - start
        out.seek(0)
        return wall, sum(ticks.values()) / TICKS, out.read()


def module_times(junit: Path, top: int = 20) -> dict[str, float]:
    """The `top` test modules' summed test times (seconds), longest first, and the rest's total."""
    times: collections.Counter = collections.Counter()
    for case in ET.parse(junit).iter("testcase"):
        times[case.get("classname", "").split(".")[-1] + ".py"] += float(case.get("time", 0))
    ranked = times.most_common()
    shown = {name: round(seconds, 1) for name, seconds in ranked[:top]}
    return {**shown, "other modules": round(sum(seconds for _, seconds in ranked[top:]), 1)}


def failures(junit: Path) -> list[str]:
    """The tests that failed or errored, by node id."""
    return [f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            for case in ET.parse(junit).iter("testcase") if case.find("failure") is not None
            or case.find("error") is not None]


def measure(root: Path, name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        load = os.getloadavg()[0]
        wall, cpu, output = run_timed([sys.executable, "-m", "pytest", "-q", *SETS[name], f"--junitxml={junit}"],
                                      root)
        counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", output)}
        return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_at_start": round(load, 2), **counts,
                "failures": failures(junit) if junit.is_file() else [],
                "modules_s": module_times(junit) if junit.is_file() else {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose tests run")
    parser.add_argument("--label", help="what `--root` holds (default: its path)")
    parser.add_argument("--sets", default="whole,fast", help="comma-separated: whole, fast")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args()
    result = {"tests_of": args.label or str(args.root.resolve()), "cores": os.cpu_count()}
    for name in args.sets.split(","):
        result[name] = measure(args.root, name)
    print(json.dumps(result, indent=1))
    if args.json:
        write_result(args.json, result)


if __name__ == "__main__":
    main()
