"""Static int8 quantised *before* fusion: ONNX Runtime's QDQ recipe on the unfused export.

The earlier static-int8 try quantised the fused graph, which ONNX Runtime could not type, so no
activation was quantised. Here the raw torch export (every MatMul and Add still separate) gets
QuantizeLinear/DequantizeLinear pairs around every MatMul: weights symmetric int8 per output
channel, activations symmetric int8 per tensor with scales calibrated (MinMax) on SQuAD
*training* windows (never XQuAD, as benchmarks/backend_fidelity.py does); ONNX Runtime then fuses
the QDQ pairs into integer kernels when a session opens (ORT_ENABLE_ALL).

Used by benchmarks/static_int8.py, which measures it against onnx-int8 (per-token dynamic,
core.qa.backends.int8_per_token) and torch fp32; it becomes a backend only if it is faster within 0.5 F1.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["quantize_static_qdq"]


class _Windows:
    """onnxruntime's CalibrationDataReader over a list of feeds (one padded batch each)."""

    def __init__(self, feeds: Sequence[dict]):
        self._it = iter(feeds)

    def get_next(self):
        return next(self._it, None)


def activation_matmuls(path: Path) -> list[str]:
    """The MatMul nodes whose inputs are both activations (attention's Q.K^T and scores.V)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    return [n.name for n in graph.node if n.op_type == "MatMul" and not any(i in weights for i in n.input)]


def quantize_static_qdq(raw: Path, target: Path, feeds: Sequence[dict[str, np.ndarray]],
                        op_types: Sequence[str] = ("MatMul",), attention: bool = True) -> Path:
    """Write the QDQ int8 model of the unfused ONNX graph ``raw`` to ``target``: ``op_types``
    quantised (weights symmetric per channel, activations symmetric per tensor), the scales
    calibrated by MinMax on ``feeds`` (int64 numpy inputs by name); ``attention`` False keeps the
    MatMuls of two activations in fp32. Returns ``target``."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = target.with_name(target.stem + ".prep.onnx")
    # shapes inferred (ONNX's own; the symbolic inference cannot finish the dynamic-axes export),
    # no graph optimisation: the quantiser must see the unfused ops
    quant_pre_process(str(raw), str(prepared), skip_optimization=True, skip_onnx_shape=False,
                      skip_symbolic_shape=True)
    try:
        quantize_static(str(prepared), str(target), _Windows(feeds), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=list(op_types), per_channel=True,
                        nodes_to_exclude=[] if attention else activation_matmuls(prepared),
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax,
                        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    finally:
        prepared.unlink(missing_ok=True)
    return target
