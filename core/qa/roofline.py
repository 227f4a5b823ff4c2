"""How much of this CPU's arithmetic a backend uses (issue 47, item 5): the FLOPs a window needs,
counted from the model's shapes, against the peak the detected instruction set allows.

FLOPs (multiply and add counted apart) are those of the matrix products, which are nearly all of
an encoder's arithmetic: per layer and window of ``s`` tokens, hidden size ``h`` and FFN size
``i``, the query, key, value and output projections (4 x 2sh^2), the FFN (2 x 2shi), the attention
scores and their weighted sum (2 x 2s^2h); then the QA head (2sh x 2). LayerNorm, softmax, GELU
and embeddings are left out (under 1% for MiniLM at 384 tokens). A window counts at its own
length: padding a batch to its longest window is work the answer does not need.

The peak is cores x clock x operations per cycle and core for the precision a backend computes
in, from the CPU flags (/proc/cpuinfo):
- AMX (amx_bf16, amx_int8): 1,024 bf16 or 2,048 int8 operations per cycle per core;
- otherwise AVX-512 (avx512f): two 512-bit FMA units, 64 fp32 FLOP per cycle, twice that for
  bf16 dot products (avx512_bf16: two products per lane), four times for int8 (avx512_vnni: four
  per lane); AMD Zen 4 (family 25) runs a 512-bit op as two 256-bit halves, so half of that;
- otherwise AVX2 + FMA: 32 fp32 FLOP per cycle (int8 and bf16 no faster than fp32).
The clock is lscpu's "CPU max MHz" where it says one, else /proc/cpuinfo's "cpu MHz" (a virtual
machine often reports only that, its base clock: turbo can exceed it, so a share above 100% is
possible in principle, never seen).
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

# The precision each backend's matrix products are computed in (core.qa.backends.selection.BACKENDS).
BACKEND_PRECISION = {"torch": "fp32", "torch-bf16": "bf16", "onnx": "fp32", "onnx-int8": "int8",
                     "openvino": "bf16", "openvino-int8": "int8",
                     "openvino-int8-full": "int8"}


def window_flops(config, tokens: int) -> int:
    """Matrix-product FLOPs of one window of ``tokens`` tokens through an encoder with a QA head.

    A hand-computed small config: 1 layer, hidden 4, FFN 8, 2 tokens: projections 4 x 2*2*4*4 =
    256, FFN 2 x 2*2*4*8 = 256, attention 2 x 2*2*2*4 = 64, QA head 2*2*4*2 = 32; 608 in all.

    >>> from types import SimpleNamespace
    >>> window_flops(SimpleNamespace(num_hidden_layers=1, hidden_size=4, intermediate_size=8), 2)
    608
    >>> minilm = SimpleNamespace(num_hidden_layers=6, hidden_size=384, intermediate_size=1536)
    >>> round(window_flops(minilm, 384) / 1e9, 2)  # issue 47: "about 9.5 GFLOP per 384-token window"
    9.51
    """
    s, h, i = tokens, config.hidden_size, config.intermediate_size
    per_layer = 4 * 2 * s * h * h + 2 * 2 * s * h * i + 2 * 2 * s * s * h
    return config.num_hidden_layers * per_layer + 2 * s * h * 2


@dataclass
class CpuPeak:
    isa: str  # "amx", "avx512", "avx2"
    cores: int
    ghz: float
    ops_per_cycle: dict  # precision -> operations per cycle and core
    clock_source: str

    def gflops(self, precision: str) -> float:
        return self.cores * self.ghz * self.ops_per_cycle[precision]

    def describe(self) -> str:
        per = ", ".join(f"{p} {self.gflops(p):.0f}" for p in ("fp32", "bf16", "int8"))
        return f"{self.isa}, {self.cores} cores x {self.ghz:.2f} GHz ({self.clock_source}); peak GFLOP/s {per}"


def ops_per_cycle(flags: set[str], vendor: str = "", family: int = 0) -> tuple[str, dict]:
    """(ISA name, operations per cycle and core by precision) from the CPU flags.

    >>> ops_per_cycle({"avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile"})
    ('amx', {'fp32': 64, 'bf16': 1024, 'int8': 2048})
    >>> ops_per_cycle({"avx512f", "avx512_bf16", "avx512_vnni"}, "AuthenticAMD", 25)
    ('avx512 (256-bit datapath)', {'fp32': 32, 'bf16': 64, 'int8': 128})
    >>> ops_per_cycle({"avx2", "fma"})
    ('avx2', {'fp32': 32, 'bf16': 32, 'int8': 32})
    """
    if "avx512f" in flags:
        half = vendor == "AuthenticAMD" and family == 25  # Zen 4: 512-bit ops as two halves
        fp32 = 32 if half else 64
        out = {"fp32": fp32, "bf16": fp32 * (2 if "avx512_bf16" in flags else 1),
               "int8": fp32 * (4 if "avx512_vnni" in flags else 1)}
        name = "avx512 (256-bit datapath)" if half else "avx512"
    else:
        out, name = {"fp32": 32 if "fma" in flags else 16}, "avx2" if "avx2" in flags else "sse"
        out.update(bf16=out["fp32"], int8=out["fp32"])
    if "amx_bf16" in flags:
        out["bf16"], name = 1024, "amx"
    if "amx_int8" in flags:
        out["int8"] = 2048
    return name, out


def detect_peak(cpuinfo: str | None = None, lscpu: str | None = None) -> CpuPeak:
    """This machine's peak from /proc/cpuinfo and lscpu (both read when not given); the cores are
    the CPUs this process may run on."""
    if cpuinfo is None:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpuinfo = f.read()
    if lscpu is None:
        try:
            lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            lscpu = ""

    def field(text: str, name: str) -> str | None:
        m = re.search(rf"^{name}\s*:\s*(.+)$", text, re.MULTILINE)
        return m.group(1).strip() if m else None

    flags = set((field(cpuinfo, "flags") or "").split())
    family = field(cpuinfo, "cpu family")
    isa, ops = ops_per_cycle(flags, field(cpuinfo, "vendor_id") or "", int(family) if family else 0)
    max_mhz = field(lscpu, "CPU max MHz")
    mhz, source = (max_mhz, "lscpu CPU max MHz") if max_mhz else (field(cpuinfo, "cpu MHz"), "cpuinfo cpu MHz")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return CpuPeak(isa, cores, float(mhz or 0) / 1000, ops, source)
