"""The eager PyTorch backends: the model's own forward pass in fp32 (``torch``) or on a bf16 copy of
its weights (``torch-bf16``, where the hardware computes in bf16)."""
from __future__ import annotations

import numpy as np


class TorchForward:
    """The model's own forward pass (CPU or GPU) under inference mode; with ``bf16`` on a copy of
    the model whose weights are bfloat16.

    Why bf16: this machine's CPU (a Xeon with AMX) multiplies bf16 matrices in its AMX tiles, and
    oneDNN, under torch, uses them: MiniLM's forward passes took 5.68 ms a question against 14.14
    in fp32 (2.49x; 2 threads, batches of 8, 160 XQuAD-en questions, rounds alternated), with a
    logit MSE of 0.00023 against fp32 and 99.6% of start and end argmaxes the same on SQuAD-train
    windows, where per-token int8 (ONNX Runtime) has 0.0039 and 97.5%. Without
    native bf16 (AVX512-BF16 or AMX) the arithmetic is emulated and slower than fp32, so the
    backend is then unavailable (``bf16_unavailable``) and torch fp32 answers."""

    def __init__(self, model, device, bf16: bool = False):
        import copy

        import torch

        self.device, self.name = device, "torch-bf16" if bf16 else "torch"
        # a copy: the fp32 model stays the engine's (its fingerprint, an ONNX export, torch fp32)
        self.model = copy.deepcopy(model).to(device=device, dtype=torch.bfloat16).eval() if bf16 else model

    def __call__(self, enc: dict, threads: int) -> tuple[np.ndarray, np.ndarray]:
        import torch

        if self.device.type == "cpu" and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)  # the engine puts the count back after its call
        with torch.inference_mode():
            out = self.model(**{k: torch.as_tensor(v).to(self.device) for k, v in enc.items()})
        return out.start_logits.float().cpu().numpy(), out.end_logits.float().cpu().numpy()


def _cpu_flags_native_bf16() -> bool | None:
    """Whether the kernel lists AVX512-BF16 or AMX tiles among this CPU's flags (the two of
    torch.cpu's probes), or None where /proc/cpuinfo cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return bool({"avx512_bf16", "amx_tile"} & set(line.split(":", 1)[1].split()))
    except OSError:
        return None
    return None


def bf16_unavailable(device) -> str | None:
    """Why bf16 arithmetic would not be native on ``device`` (a torch.device or its type, "cpu";
    None when it is): on a CPU it needs AVX512-BF16 or AMX, on a GPU one that computes in bf16
    (Ampere and later). On Linux the CPU's flags are read from /proc/cpuinfo, so asking (the
    Ask page's model list does, through each card's default backend) imports no torch."""
    kind = getattr(device, "type", device)
    if kind == "cuda":
        import torch

        return None if torch.cuda.is_bf16_supported() else "this GPU does not compute in bf16"
    if kind != "cpu":
        return f"no bf16 backend for {kind}"
    native = _cpu_flags_native_bf16()
    if native is None:
        import torch

        # torch.cpu's capability checks are private; a torch without them says no
        checks = [getattr(torch.cpu, n, None) for n in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
        try:
            native = any(c() for c in checks if callable(c))
        except Exception:  # a failed probe means "not known to be native"
            native = False
    return None if native else ("this CPU has no native bf16 arithmetic (AVX512-BF16 or AMX): "
                                "emulated, bf16 would be slower than fp32")

