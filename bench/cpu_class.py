"""CPU classes emulated on the machine at hand, for the benches: the environment that makes torch's kernel
libraries use only one class's instructions.

Each library honours its own switch, and only where it takes its kernel from a library call:
- oneDNN (`torch._int_mm`, bf16 matmuls): `ONEDNN_MAX_CPU_ISA`;
- fbgemm (the packed int8 linear, `quantized.linear_dynamic`): `FBGEMM_ENABLE_INSTRUCTIONS`;
- MKL (float32 `F.linear`): `MKL_ENABLE_INSTRUCTIONS`;
- ATen's own vectorised loops (softmax, layer norm, elementwise): `ATEN_CPU_CAPABILITY`.
On an AMD EPYC with AVX2 only, `_int_mm` made no oneDNN call at all and ran ATen's scalar loop. Capping
oneDNN at AVX2 is not the same (oneDNN still has AVX2 int8 code), so the "avx2" class also switches oneDNN
off inside torch (`torch.backends.mkldnn.enabled = False`, through `emulate/sitecustomize.py` on
PYTHONPATH), which sends `_int_mm` to that loop. `check_switches` shows, on the machine at hand, that each
switch changes the kernel's time before a number is trusted.

    python bench/cpu_class.py                 # each class's switches and a kernel timed under each
    eval "$(python bench/cpu_class.py --env avx2)"; python app.py   # the app as on an AVX2-only CPU
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent

# Each class: the environment that emulates it. "native" is the machine as it is.
CLASSES: dict[str, dict[str, str]] = {
    "native": {},
    "avx512-vnni": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI", "FBGEMM_ENABLE_INSTRUCTIONS": "AVX512",
                    "MKL_ENABLE_INSTRUCTIONS": "AVX512", "ATEN_CPU_CAPABILITY": "avx512"},
    "avx-vnni": {"ONEDNN_MAX_CPU_ISA": "AVX2_VNNI", "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
                 "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
             "ATEN_CPU_CAPABILITY": "avx2", "BENCH_TORCH_MKLDNN": "0",
             "PYTHONPATH": str(BENCH / "emulate")},
}
DESCRIPTIONS = {
    "native": "the machine's own CPU",
    "avx512-vnni": "AVX-512 with VNNI, no AMX (Ice Lake / Cascade Lake Xeons, AMD Zen 4)",
    "avx-vnni": "AVX2 with AVX-VNNI, no AVX-512 (Intel consumer CPUs since Alder Lake)",
    "avx2": "AVX2 and FMA only, no VNNI (AMD Zen 2 / Zen 3): oneDNN's int8 off, as torch ran there",
}


def environment(cpu_class: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) with `cpu_class`'s switches set."""
    env = dict(os.environ if base is None else base)
    for key, value in CLASSES[cpu_class].items():
        env[key] = f"{value}{os.pathsep}{env[key]}" if key == "PYTHONPATH" and env.get(key) else value
    return env


KERNEL_PROBE = """
import json, time, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
def best(f, n=30):
    f(); out = float("inf")
    for _ in range(n):
        s = time.perf_counter(); f(); out = min(out, time.perf_counter() - s)
    return round(out * 1e3, 4)
a = torch.randint(-63, 64, (5, 256), dtype=torch.int8); b = torch.randint(-127, 127, (256, 8008), dtype=torch.int8)
w = torch.randn(8008, 256); x = torch.randn(6, 256)
q = torch.quantize_per_channel(w, (w.abs().amax(1) / 127).double(), torch.zeros(8008, dtype=torch.long), 0, torch.qint8)
packed = torch.ops.quantized.linear_prepack(q, None)
y = torch.randn(2048, 1024)
wb = torch.randn(1024, 1024); xb = torch.randn(512, 1024)
qb = torch.quantize_per_channel(wb, (wb.abs().amax(1) / 127).double(), torch.zeros(1024, dtype=torch.long), 0, torch.qint8)
packed_big = torch.ops.quantized.linear_prepack(qb, None)
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "mkldnn": torch.backends.mkldnn.enabled,
                  "int_mm_5x256x8008_ms": best(lambda: torch._int_mm(a, b)),
                  "packed_int8_5x256x8008_ms": best(lambda: torch.ops.quantized.linear_dynamic(x, packed, True)),
                  "fp32_linear_5x256x8008_ms": best(lambda: torch.nn.functional.linear(x, w)),
                  "packed_int8_512x1024x1024_ms": best(lambda: torch.ops.quantized.linear_dynamic(xb, packed_big, True)),
                  "fp32_linear_512x1024x1024_ms": best(lambda: torch.nn.functional.linear(xb, wb)),
                  "softmax_2048x1024_ms": best(lambda: torch.softmax(y, -1))}))
"""


def check_switches() -> dict[str, dict]:
    """Each class's kernel timings on this machine (one thread): a switch that changes nothing shows here."""
    out = {}
    for name in CLASSES:
        done = subprocess.run([sys.executable, "-c", KERNEL_PROBE], env=environment(name), capture_output=True,
                              text=True, check=True)
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=list(CLASSES), help="print the shell exports of one class and exit")
    parser.add_argument("--json", help="also write the kernel timings to this file (see bench/report.py)")
    args = parser.parse_args()
    if args.env:
        print("\n".join(f"export {k}={shlex.quote(v)}" for k, v in environment(args.env, {}).items()))
        return
    result = {"switches": {name: {**CLASSES[name], "PYTHONPATH": "bench/emulate"} if "PYTHONPATH" in CLASSES[name]
                           else CLASSES[name] for name in CLASSES}, "kernel_ms_one_thread": check_switches()}
    print(json.dumps(result, indent=1))
    if args.json:
        sys.path.insert(0, str(BENCH))
        from report import write_result
        write_result(args.json, result)


if __name__ == "__main__":
    main()
