"""core.qa.backends.int8_per_token: each token of a MatMul's input is quantised with its own scale, the
graph computes what the numpy reference says (hand-checked values included), a loud token no
longer costs the quiet ones their precision, and the int8 backend's file is built this way."""
import doctest

import numpy as np
import pytest

from core.qa.backends import int8_per_token

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def one_matmul(w: np.ndarray, opset: int = 17):
    """A graph computing X @ W for X of shape (batch, sequence, K)."""
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")], "one_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", n])],
        [numpy_helper.from_array(w.astype(np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run(model, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x.astype(np.float32)})[0]


def test_doctests():
    assert doctest.testmod(int8_per_token).failed == 0


@pytest.mark.parametrize("opset", [17, 18])  # ReduceMax takes its axes as an attribute, then an input
def test_hand_checked_values_each_row_on_its_own_scale(opset):
    """W = I (16 x 16): int8 weights 127 on the diagonal, scale 1/127, so Y is each row's quantised
    values times its scale. Row 1's largest |x| is 127: scale 1, 63.5 -> 64 and 62.5 -> 62 (QuantizeLinear
    rounds half to even). Row 2's is 254: scale 2, 3.0 -> 1.5 -> 2 -> 4.0. Row 3 is all zeros."""
    model = one_matmul(np.eye(16), opset)
    assert int8_per_token.quantize_per_token(model) == ["proj"]
    ops = [n.op_type for n in model.graph.node]
    assert "MatMul" not in ops and ops.count("MatMulIntegerToFloat") == 1
    x = np.zeros((1, 3, 16), np.float32)
    x[0, 0, :3] = [127.0, 63.5, 62.5]
    x[0, 1, :2] = [-254.0, 3.0]
    y = run(model, x)
    assert y[0, 0, :3].tolist() == [127.0, 64.0, 62.0] and not y[0, 0, 3:].any()
    assert y[0, 1, :2].tolist() == [-254.0, 4.0] and not y[0, 1, 2:].any()
    assert not y[0, 2].any()


@pytest.mark.parametrize("unsigned_weights", [None, True])  # this CPU's choice; the U8U8 form anywhere
def test_the_graph_computes_the_reference_and_rows_stay_apart(unsigned_weights):
    """The reference is exact integer arithmetic: on an AVX2 CPU without VNNI the int8 weights
    saturate (one output was 8.31 for 8.53), the uint8 ones chosen there do not."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(48, 32)).astype(np.float32)
    model = one_matmul(w)
    int8_per_token.quantize_per_token(model, unsigned_weights=unsigned_weights)
    weights = {i.name: i.data_type for i in model.graph.initializer if i.name.endswith(("weight_int8", "weight_uint8"))}
    from onnx import TensorProto

    chosen = int8_per_token.integer_products_saturate() if unsigned_weights is None else unsigned_weights
    assert list(weights.values()) == [TensorProto.UINT8 if chosen else TensorProto.INT8]
    x = rng.normal(size=(2, 5, 48)).astype(np.float32)
    y = run(model, x)
    assert np.allclose(y, int8_per_token.reference_matmul(x, w), rtol=1e-5, atol=1e-4)
    exact = x @ w
    assert np.abs(y - exact).max() < 0.02 * np.abs(exact).max()  # int8's error, not arbitrary
    # another token made 1,000x louder, in the same window or in another one: the rest is unchanged
    for b, t in ((0, 3), (1, 0)):
        loud = x.copy()
        loud[b, t] *= 1000.0
        y_loud = run(model, loud)
        keep = np.ones((2, 5), bool)
        keep[b, t] = False
        assert np.array_equal(y_loud[keep], y[keep])


def test_a_loud_token_costs_the_quiet_ones_far_less_than_with_per_tensor_int8(tmp_path):
    """The reason for the recipe: ONNX Runtime's quantize_dynamic takes one scale for the whole
    input, so one token 50x louder than the rest coarsens every other token's step."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(1)
    w = rng.normal(size=(64, 64)).astype(np.float32)
    x = rng.normal(size=(1, 20, 64)).astype(np.float32)
    x[0, 7] *= 50.0
    exact = x @ w
    quiet = np.arange(20) != 7
    per_tensor_path = tmp_path / "per_tensor.onnx"
    onnx.save(one_matmul(w), str(tmp_path / "fp32.onnx"))
    quantize_dynamic(str(tmp_path / "fp32.onnx"), str(per_tensor_path), weight_type=QuantType.QInt8, per_channel=True)
    per_tensor = run(onnx.load(str(per_tensor_path)), x)
    model = one_matmul(w)
    int8_per_token.quantize_per_token(model)
    per_token = run(model, x)
    err_tensor = np.abs(per_tensor - exact)[0, quiet].mean()
    err_token = np.abs(per_token - exact)[0, quiet].mean()
    assert err_token < err_tensor / 10, (err_token, err_tensor)


def test_narrow_and_skipped_matmuls_stay_fp32_and_a_shared_input_is_quantised_once():
    """Two projections of one input (as a layer's query and key) share one QuantizeLinear; a MatMul
    named in ``skip`` and one with a narrow output (the QA head's two logits) stay fp32."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    ws = {name: rng.normal(size=(32, n)).astype(np.float32) for name, n in
          (("q", 32), ("k", 32), ("kept", 32), ("head", 2))}
    nodes = [helper.make_node("MatMul", ["x", name], [name + "_out"], name=name) for name in ws]
    graph = helper.make_graph(
        nodes, "four", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", 32])],
        [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, None) for name in ws],
        [numpy_helper.from_array(w, name) for name, w in ws.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert int8_per_token.quantize_per_token(model, skip={"kept"}) == ["q", "k"]
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") == 1 and ops.count("MatMulIntegerToFloat") == 2
    assert sorted(n.name for n in model.graph.node if n.op_type == "MatMul") == ["head", "kept"]
    assert {i.name for i in model.graph.initializer} >= {"kept", "head"}
    assert not {"q", "k"} & {i.name for i in model.graph.initializer}  # fp32 copies dropped
    x = rng.normal(size=(1, 6, 32)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = dict(zip([n + "_out" for n in ws], session.run([n + "_out" for n in ws], {"x": x})))
    assert np.allclose(out["kept_out"], x @ ws["kept"], atol=1e-5)
    assert np.allclose(out["head_out"], x @ ws["head"], atol=1e-5)
    assert np.allclose(out["q_out"], int8_per_token.reference_matmul(x, ws["q"]), rtol=1e-5, atol=1e-4)


def gelu_then_matmul(w: np.ndarray, mask: np.ndarray | None = None):
    """x -> Gelu (com.microsoft) [-> Mul by a 0/1 mask, as the outlier split does] -> MatMul W."""
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    nodes = [helper.make_node("Gelu", ["x"], ["g"], name="gelu", domain=int8_per_token.MS_DOMAIN)]
    inits = [numpy_helper.from_array(w.astype(np.float32), "w")]
    src = "g"
    if mask is not None:
        nodes.append(helper.make_node("Mul", ["g", "mask"], ["gm"], name="mask"))
        inits.append(numpy_helper.from_array(mask.astype(np.float32), "mask"))
        src = "gm"
    nodes.append(helper.make_node("MatMul", [src, "w"], ["y"], name="proj"))
    graph = helper.make_graph(nodes, "gelu_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(int8_per_token.MS_DOMAIN, 1)], ir_version=8)


@pytest.mark.parametrize("masked", [False, True])
def test_a_gelu_fed_matmul_is_shifted_and_quantised_unsigned(masked):
    """GELU outputs are >= -0.17: shifted by GELU_FLOOR, unsigned, they use all 255 steps where the
    symmetric scheme wastes half of them; the shift's product is taken back out exactly."""
    from scipy.special import erf

    rng = np.random.default_rng(3)
    w = rng.normal(size=(64, 32)).astype(np.float32)
    mask = (np.arange(64) != 5).astype(np.float32) if masked else None
    x = rng.normal(scale=2.0, size=(1, 30, 64)).astype(np.float32)
    g = 0.5 * x * (1 + erf(x / np.sqrt(2)))
    g = g * mask if masked else g
    assert g.min() >= -int8_per_token.GELU_FLOOR
    exact = g @ w
    model = gelu_then_matmul(w, mask)
    floors = int8_per_token.gelu_floors(model.graph)
    assert floors[("gm" if masked else "g")] == int8_per_token.GELU_FLOOR
    int8_per_token.quantize_per_token(model)
    ops = [n.op_type for n in model.graph.node]
    assert "Abs" not in ops and ops.count("MatMulIntegerToFloat") == 1
    y = run(model, x)
    assert np.allclose(y, int8_per_token.reference_matmul(g, w, int8_per_token.GELU_FLOOR), rtol=1e-4, atol=1e-3)
    symmetric = gelu_then_matmul(w, mask)
    int8_per_token.quantize_per_token(symmetric, shift_gelu=False)
    err_shifted = np.abs(y - exact).mean()
    err_symmetric = np.abs(run(symmetric, x) - exact).mean()
    assert err_shifted < 0.8 * err_symmetric, (err_shifted, err_symmetric)  # 0.061 against 0.083
