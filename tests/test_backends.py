"""Engine backends (issue 27): ONNX Runtime fp32 gives torch's spans, int8 stays close, the
backend is in the prediction cache key only when it is not torch, a backend that cannot run here
falls back to torch with a message, and a bad backend name is refused where it enters."""
import dataclasses
import doctest
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core import compat
from core.qa import registry
from core.qa.backends import onnx_runtime, selection, torch_eager
from core.qa.engine import EngineSettings, QAEngine, SettingsError
from core.qa.features import build_windows

pytest.importorskip("onnxruntime")

CONTEXTS = [
    "The eiffel tower was completed in 1889 . it is in paris , the capital of france .",
    "london is the largest city of england . the river in london is called the thames .",
    "berlin is the capital of germany . its population was three million people in 2009 .",
    "doctor who is a television series . it began in 1963 and has been televised since .",
]
QUESTIONS = [
    ("when was the eiffel tower completed ?", 0), ("what is the capital of france ?", 0),
    ("where is the eiffel tower ?", 0), ("which city is the largest in england ?", 1),
    ("what is the river in london called ?", 1), ("what is the capital of germany ?", 2),
    ("how many people were in berlin in 2009 ?", 2), ("when did doctor who begin ?", 3),
    ("what is doctor who ?", 3), ("since when has it been televised ?", 3),
    ("who built the tower ?", 0), ("what was the population ?", 2),
]
QS = [q for q, _ in QUESTIONS]
# the backend setting's choices, as every refusal names them
CHOICE_LIST = "default, torch, torch-bf16, onnx, onnx-int8, openvino, openvino-int8, openvino-int8-full"
CS = [CONTEXTS[i] for _, i in QUESTIONS]


@pytest.fixture(scope="module")
def model_and_tokenizer(tiny_qa_dir):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    return (AutoModelForQuestionAnswering.from_pretrained(tiny_qa_dir),
            AutoTokenizer.from_pretrained(tiny_qa_dir))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One export cache for the module: the export is made once and reused, as in the app."""
    return tmp_path_factory.mktemp("qax_cache")


@pytest.fixture
def make(model_and_tokenizer, cache, monkeypatch):
    monkeypatch.setenv("QAX_CACHE_DIR", str(cache))

    def build(backend="torch", **settings):
        model, tok = model_and_tokenizer
        settings.setdefault("threads", 1)
        return QAEngine(model, tok, EngineSettings(backend=backend, **settings), device="cpu")

    return build


def spans(preds):
    return [(p.best.start, p.best.end) if p.best else None for p in preds]


def test_onnx_gives_torch_spans_on_every_question(make):
    torch_preds = make("torch").predict(QS, CS, n_best=3)
    onnx_eng = make("onnx")
    assert onnx_eng.backend_name == "onnx" and onnx_eng.backend_message is None
    onnx_preds = onnx_eng.predict(QS, CS, n_best=3)
    assert spans(onnx_preds) == spans(torch_preds)
    for a, b in zip(onnx_preds, torch_preds):  # the whole n-best, not only the best span
        assert [(s.start, s.end) for s in a.nbest] == [(s.start, s.end) for s in b.nbest]
        assert np.allclose([s.score for s in a.nbest], [s.score for s in b.nbest], atol=1e-4)


def test_onnx_int8_logits_and_answers_stay_close_to_torch(make):
    torch_eng, int8_eng = make("torch"), make("onnx-int8")
    assert int8_eng.backend_name == "onnx-int8"
    windows = build_windows(torch_eng.tokenizer, QS, CS, max_length=384, stride=128)[:4]
    t_start, t_end = torch_eng._forward(windows)
    q_start, q_end = int8_eng._forward(windows)
    assert q_start.shape == t_start.shape and q_start.dtype == np.float32
    # int8 moves the logits a little, not arbitrarily, on every window's own tokens (int8 runs each
    # window alone: a padded position holds PAD_LOGIT, never read by the span decoding)
    for i, w in enumerate(windows):
        n = len(w.input_ids)
        assert np.abs(q_start[i, :n] - t_start[i, :n]).max() < 0.2 and np.abs(q_end[i, :n] - t_end[i, :n]).max() < 0.2
        assert (q_start[i, n:] == onnx_runtime.PAD_LOGIT).all()
    from core.metrics.squad import squad_scores

    torch_text = {str(i): [p.text] for i, p in enumerate(torch_eng.predict(QS, CS, n_best=1))}
    int8_text = {str(i): p.text for i, p in enumerate(int8_eng.predict(QS, CS, n_best=1))}
    assert squad_scores(int8_text, torch_text)["f1"] >= 75.0


def test_an_int8_answer_does_not_depend_on_the_other_windows_of_its_batch(make):
    """The int8 backend runs each window alone, so its logits are the same bit for bit alone, in any
    batch and on any threads. Its per-token scales (core.qa.backends.int8_per_token) would keep a window's
    logits apart from its neighbours' even in one padded run, where per-tensor int8 moved them."""
    eng = make("onnx-int8")
    windows = build_windows(eng.tokenizer, QS, CS, max_length=384, stride=128)
    alone = [eng._forward([w]) for w in windows]
    for threads in (1, 2):  # 2: the windows are spread over two concurrent runs
        start, end = eng._forward(windows, threads=threads)
        for (a_start, a_end), w, s, e in zip(alone, windows, start, end):
            n = len(w.input_ids)
            assert np.array_equal(s[:n], a_start[0]) and np.array_equal(e[:n], a_end[0])
    assert spans(eng.predict(QS, CS)) == spans(make("onnx-int8", batch_size=1).predict(QS, CS))
    # one run over the padded batch: each row's own tokens still get its lone logits
    impl = eng._forward_impl
    batched = onnx_runtime.OnnxForward(impl.path, "onnx-int8", threads=1, per_window=False)
    enc = dict(eng.tokenizer.pad([{"input_ids": w.input_ids, **w.extra} for w in windows],
                                 padding=True, return_tensors="np"))
    b_start, b_end = batched(enc, 1)
    for i, (w, a) in enumerate(zip(windows, alone)):
        n = len(w.input_ids)
        assert np.allclose(b_start[i, :n], a[0][0], atol=1e-5) and np.allclose(b_end[i, :n], a[1][0], atol=1e-5)


def test_a_per_window_run_reads_each_rows_own_tokens_whichever_side_is_padded(make):
    eng = make("onnx-int8")
    impl = eng._forward_impl
    short, long = build_windows(eng.tokenizer, QS[:2], ["berlin is the capital .", CS[1]], max_length=384, stride=128)
    pad = len(long.input_ids) - len(short.input_ids)
    right = {"input_ids": np.array([short.input_ids + [0] * pad, long.input_ids]),
             "token_type_ids": np.array([short.extra["token_type_ids"] + [0] * pad, long.extra["token_type_ids"]]),
             "attention_mask": np.array([[1] * len(short.input_ids) + [0] * pad, [1] * len(long.input_ids)])}
    left = {k: np.array([np.roll(v[0], pad), v[1]]) for k, v in right.items()}
    r_start, r_end = impl(right, 1)
    l_start, l_end = impl(left, 1)
    n = len(short.input_ids)
    assert np.array_equal(r_start[0, :n], l_start[0, pad:]) and np.array_equal(r_end[0, :n], l_end[0, pad:])
    assert np.array_equal(r_start[1], l_start[1])
    # padded positions hold no logit a span could be read from
    assert (r_start[0, n:] == onnx_runtime.PAD_LOGIT).all() and (l_end[0, :pad] == onnx_runtime.PAD_LOGIT).all()


def test_the_export_keeps_residual_adds_and_layernorms_apart(make, cache):
    """SkipLayerNormalization is the slow kernel here (onnxruntime 1.31: 5x Add + LayerNorm):
    neither the export nor a session's own optimizer makes it."""
    import onnx
    import onnxruntime as ort

    make("onnx")
    path = next((cache / "onnx").glob("*/model.onnx"))
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert "LayerNormalization" in ops and "SkipLayerNormalization" not in ops
    opts = ort.SessionOptions()
    opts.optimized_model_filepath = str(cache / "optimized.onnx")
    ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"],
                         disabled_optimizers=onnx_runtime.SESSION_DISABLED_OPTIMIZERS)
    assert "SkipLayerNormalization" not in {n.op_type for n in onnx.load(str(cache / "optimized.onnx")).graph.node}


def test_the_int8_file_quantises_every_projection_per_token(make, cache):
    """The int8 graph: attention fused as MultiHeadAttention so that its query, key and value
    projections are MatMuls, and every weight MatMul per-token int8 (core.qa.backends.int8_per_token) but
    the QA head's; none of ONNX Runtime's per-tensor ops (DynamicQuantizeMatMul, QAttention)."""
    import onnx

    from core.qa.backends.int8_per_token import MIN_OUTPUT_WIDTH

    model = make("onnx-int8").model
    path = next((cache / "onnx").glob(f"*/{onnx_runtime.INT8_FILE}"))
    graph = onnx.load(str(path)).graph
    ops = [n.op_type for n in graph.node]
    layers = model.config.num_hidden_layers
    assert ops.count("MultiHeadAttention") == layers
    # q, k, v, attention output, FFN in and out per layer
    assert ops.count("MatMulIntegerToFloat") == 6 * layers
    assert ops.count("QuantizeLinear") == 4 * layers  # q, k and v share their input's
    assert not {"DynamicQuantizeMatMul", "QAttention", "Attention"} & set(ops)
    widths = {i.name: tuple(i.dims) for i in graph.initializer}
    fp32_weight_matmuls = [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in widths]
    assert all(widths[n.input[1]][1] < MIN_OUTPUT_WIDTH or n.name.endswith("/outlier_fp32")
               for n in fp32_weight_matmuls)
    assert not list(path.parent.glob("*partial*"))  # no temporary file left behind


def test_export_happens_once_then_is_only_opened(make, cache, monkeypatch):
    make("onnx-int8")
    make("onnx")
    files = sorted((cache / "onnx").glob("*/*.onnx"))
    assert [f.name for f in files] == [onnx_runtime.INT8_FILE, "model.onnx"]
    stamps = [f.stat().st_mtime_ns for f in files]

    def no_second_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_runtime, "_export", no_second_export)
    monkeypatch.setattr(onnx_runtime, "_quantize", no_second_export)
    for backend in ("onnx", "onnx-int8"):
        assert make(backend).backend_name == backend
    assert [f.stat().st_mtime_ns for f in files] == stamps


def test_each_backend_keeps_only_its_own_graph(model_and_tokenizer, tmp_path, monkeypatch):
    """An int8 model keeps its int8 graph and no fp32 one beside it (the setup's cache holds what
    the cards' backends open, nothing more); the fp32 graph asked for later is exported then. The
    raw torch export is never left behind."""
    model, tok = model_and_tokenizer
    names = onnx_runtime.model_input_names(tok, model)
    exports = []
    real_export = onnx_runtime._export

    def counted(*args, **kwargs):
        exports.append(args[-1])
        return real_export(*args, **kwargs)

    monkeypatch.setattr(onnx_runtime, "_export", counted)
    folder = tmp_path / "graphs"
    onnx_runtime.ensure_export(model, names, "onnx-int8", folder=folder, tokenizer=tok)
    assert len(exports) == 1
    assert sorted(f.name for f in folder.iterdir() if f.suffix == ".onnx") == [onnx_runtime.INT8_FILE]
    onnx_runtime.ensure_export(model, names, "onnx", folder=folder)
    onnx_runtime.ensure_export(model, names, "onnx-int8", folder=folder, tokenizer=tok)
    assert len(exports) == 2
    assert sorted(f.name for f in folder.iterdir() if f.suffix == ".onnx") == [onnx_runtime.INT8_FILE, "model.onnx"]


def test_changed_threads_make_a_session_with_those_threads(make):
    eng = make("onnx")
    eng.predict(QS[:2], CS[:2])
    assert eng._forward_impl.session.get_session_options().intra_op_num_threads == 1
    eng.settings.threads = 2
    eng.predict(QS[:2], CS[:2])
    assert eng._forward_impl.session.get_session_options().intra_op_num_threads == 2
    assert sorted(eng._forward_impl._sessions) == [1, 2]  # one session per count, kept


def test_under_the_policy_an_engine_answering_beside_another_uses_one_thread(make, monkeypatch):
    """threads=None: the budget alone, one thread while another caller holds a slot."""
    from core.qa.threads import Slot

    monkeypatch.setenv("QAX_THREADS", "2")
    eng = make("onnx", threads=None)
    used, impl = [], eng._forward_impl

    def spy(enc, threads):
        used.append(threads)
        return impl(enc, threads)

    eng._forward_impl = spy
    alone = eng.predict(QS, CS)
    assert set(used) == {2}
    used.clear()
    with Slot():  # another asker (or a sweep) is answering
        beside = eng.predict(QS, CS)
    assert set(used) == {1}
    assert spans(beside) == spans(alone)
    assert sorted(impl._sessions) == [1, 2]
    # the two sessions read one copy of the embedding tables: less than twice the file
    tables = sum(array.nbytes for array, _ in impl._tables.values())
    assert tables > 0
    assert impl.held_bytes() == 2 * impl.path.stat().st_size - tables


def test_fingerprint_has_the_backend_only_when_it_is_not_torch(make):
    from core.sweeps.keys import engine_fingerprint

    # torch keeps the key it had before backends existed: stored sweeps stay usable (checked on
    # an engine made before any other backend: they share this module's tokenizer, whose JSON an
    # export's tokenizing may change, and each engine hashes the JSON it was made with)
    torch_eng = make("torch")
    h = torch_eng._hash_weights_and_tokenizer()
    max_length, stride = torch_eng._window_shape()
    s = torch_eng.settings
    h.update(f"{max_length}:{stride}:{s.max_answer_tokens}:{s.top_k}".encode())
    assert engine_fingerprint(torch_eng) == h.hexdigest()[:20]
    # the cache never serves one backend's answer for another
    # (a backend this CPU cannot run answers with torch, and then has torch's key: the bf16 ones
    # on a CPU without AVX512-BF16 or AMX)
    engines = {b: make(b) for b in selection.BACKENDS}
    prints = {b: engine_fingerprint(e) for b, e in engines.items() if e.resolve_backend() == b}
    assert {"torch", "onnx", "onnx-int8"} <= set(prints)
    assert len(set(prints.values())) == len(prints)


def test_a_new_quantisation_recipe_gets_a_new_cache_key(make, monkeypatch):
    from core.sweeps.keys import engine_fingerprint

    eng = make("onnx-int8")
    before = engine_fingerprint(eng)
    monkeypatch.setitem(compat.FINGERPRINT_TAGS, "onnx-int8", "onnx-int8:some-other-recipe")
    assert engine_fingerprint(eng) != before


def _assert_fell_back(eng, torch_preds, why, caplog):
    assert eng.settings.backend == "onnx"  # what was asked for stays visible
    assert eng.backend_name == "torch"
    assert why in eng.backend_message and "answering with torch" in eng.backend_message
    assert any(why in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert spans(eng.predict(QS, CS)) == spans(torch_preds)
    from core.sweeps.keys import engine_fingerprint

    # torch answered, so its predictions are stored as torch's
    assert engine_fingerprint(eng) == engine_fingerprint(make_torch_like(eng))


def make_torch_like(eng):
    return QAEngine(eng.model, eng.tokenizer, dataclasses.replace(eng.settings, backend="torch"), device="cpu")


def test_missing_onnxruntime_falls_back_to_torch_with_a_message(make, monkeypatch, caplog):
    torch_preds = make("torch").predict(QS, CS)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    with caplog.at_level(logging.WARNING):
        eng = make("onnx")
    _assert_fell_back(eng, torch_preds, "onnxruntime is not installed", caplog)


def test_failed_export_falls_back_to_torch_with_a_message(make, tmp_path, monkeypatch, caplog):
    torch_preds = make("torch").predict(QS, CS)
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))  # nothing exported yet here

    def broken(*args, **kwargs):
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(onnx_runtime, "_export", broken)
    with caplog.at_level(logging.WARNING):
        eng = make("onnx")
    _assert_fell_back(eng, torch_preds, "exporter exploded", caplog)
    assert not list(tmp_path.glob("onnx/*/*.onnx"))  # no half file left under the final name


@pytest.mark.parametrize("value", ["tensorrt", "ONNX", "", None, 1, "onnx int8"])
def test_a_bad_backend_is_refused_wherever_it_is_set(make, value):
    message = f"^backend must be one of {CHOICE_LIST}, got {value!r}$"
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        EngineSettings(backend=value)
    with pytest.raises(SettingsError):
        dataclasses.replace(EngineSettings(), backend=value)
    eng = make("torch")
    with pytest.raises(SettingsError) as err:
        eng.settings.backend = value
    assert err.value.setting == "backend"
    assert eng.settings.backend == "torch" and eng.backend_name == "torch"


@pytest.mark.parametrize("module", ["core.models.evaluate", "core.sweeps.cli"])
def test_the_clis_refuse_a_bad_backend_before_loading_anything(module, capsys):
    import importlib

    main = importlib.import_module(module).main
    argv = (["--model", "no-such-model", "--dataset", "demo.en"] if module == "core.models.evaluate"
            else ["--dataset", "demo.en", "--perturbations", "none", "--models", "no-such-model"])
    assert main([*argv, "--backend", "tensorrt"]) == 2
    err = capsys.readouterr().err
    # core.sweeps's --backend also names where the sweep runs (local or ray, core.sweeps.running.ray)
    where = "local, ray, " if module == "core.sweeps.cli" else ""
    assert f"--backend must be one of {where}{CHOICE_LIST}, got 'tensorrt'" in err
    if module == "core.sweeps.cli":
        assert main([*argv, "--engine-backend", "tensorrt"]) == 2
        assert (f"--engine-backend must be one of {CHOICE_LIST}, got 'tensorrt'"
                in capsys.readouterr().err)


def test_registry_keeps_one_engine_per_backend(tiny_registry, cache, monkeypatch):
    from core.qa import registry

    monkeypatch.setenv("QAX_CACHE_DIR", str(cache))
    a = registry.load_engine("tiny-a", EngineSettings(threads=1), path=tiny_registry)
    b = registry.load_engine("tiny-a", EngineSettings(threads=1, backend="onnx"), path=tiny_registry)
    assert a is not b and (a.backend_name, b.backend_name) == ("torch", "onnx")
    assert registry.load_engine("tiny-a", EngineSettings(threads=1, backend="onnx"), path=tiny_registry) is b


def test_default_backend_is_the_one_the_models_card_records(tiny_qa_dir, cache, tmp_path, monkeypatch):
    """backend="default" (the setting's default) answers with the backend the model card names as
    chosen by the rule; torch for a model without that record, and on a GPU."""
    from core.qa import registry

    monkeypatch.setenv("QAX_CACHE_DIR", str(cache))
    carded = tmp_path / "carded"
    carded.mkdir()
    for f in tiny_qa_dir.iterdir():
        (carded / f.name).symlink_to(f)
    (carded / "model_card.json").write_text('{"backends": {"default": "onnx"}}')
    toml = tmp_path / "models.toml"
    toml.write_text(f'[[model]]\nname = "plain"\npath = "{tiny_qa_dir}"\n\n'
                    f'[[model]]\nname = "carded"\npath = "{carded}"\n')
    assert EngineSettings().backend == "default"
    plain = registry.load_engine("plain", EngineSettings(threads=1), path=toml)
    chosen = registry.load_engine("carded", EngineSettings(threads=1), path=toml)
    assert (plain.default_backend, plain.backend_name) == ("torch", "torch")
    assert (chosen.default_backend, chosen.backend_name) == ("onnx", "onnx")
    # the answers' cache key follows the backend that answers, not the word "default"
    explicit = registry.load_engine("carded", EngineSettings(threads=1, backend="onnx"), path=toml)
    assert chosen.fingerprint() == explicit.fingerprint() != plain.fingerprint()
    # a card naming something that is not a backend means torch
    (carded / "model_card.json").write_text('{"backends": {"default": "tensorrt"}}')
    assert registry.get_entry("carded", toml).default_backend() == "torch"
    # a choice measured with another recipe than today's means torch until measured again
    tag = compat.FINGERPRINT_TAGS["onnx"]
    for recipe, backend in (("onnx:an-older-export", "torch"), (tag, "onnx")):
        (carded / "model_card.json").write_text(json.dumps(
            {"backends": {"default": "onnx", "backends": {"onnx": {"recipe": recipe}}}}))
        assert registry.get_entry("carded", toml).default_backend() == backend


def test_benchmark_doctests():
    """benchmarks/ is not a doctest path (its scripts are run, not imported): its helpers here."""
    from benchmarks import backend_fidelity, qa_throughput

    assert doctest.testmod(qa_throughput).failed == 0
    fidelity = doctest.testmod(backend_fidelity)
    assert fidelity.attempted and fidelity.failed == 0


def test_sidebar_backend_reaches_the_engine_that_answers(tiny_registry, cache, monkeypatch):
    """The sidebar's Backend choice is part of the loaders' cache key: the Ask page answers with an
    ONNX engine after choosing onnx, not with the torch one cached before."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("QAX_CACHE_DIR", str(cache))
    monkeypatch.setattr(registry, "_engines", None)  # only engines this test's page loads count below
    at = AppTest.from_file("../app.py", default_timeout=120).run()
    assert at.selectbox(key="backend_pick").value == "default"  # the tiny model has no card: torch
    assert at.selectbox(key="backend_pick").options == ["default (each model's)", *selection.BACKENDS]
    at.selectbox(key="backend_pick").set_value("onnx").run()
    at.button(key="ask_go").click().run()
    assert not at.exception
    assert at.session_state["backend"] == "onnx"
    onnx_engines = [h.engine for h in registry.engines().loaded() if h.engine.settings.backend == "onnx"]
    assert onnx_engines and all(e.backend_name == "onnx" for e in onnx_engines)
    # the page says which backend answered, under each model's answer
    from rendered import shown
    assert sum("answered with onnx" in shown(c.value) for c in at.caption) == 2


def _shipped(name, *backends):
    """The shipped model ``name`` on each of ``backends``: only those a test compares, since each
    load converts or reads a graph of its own."""
    from core.qa import registry

    entry = registry.get_entry(name)
    if not entry.is_installed():
        pytest.skip(f"{name} is not installed: {entry.status()}")
    return {b: registry.load_engine(name, EngineSettings(backend=b, threads=1)) for b in backends}


def _native_bf16() -> bool:
    import torch

    return torch_eager.bf16_unavailable(torch.device("cpu")) is None


NATIVE_BF16 = _native_bf16()
NEEDS_BF16 = pytest.mark.skipif(not NATIVE_BF16, reason="this CPU has no native bf16 (AVX512-BF16 or AMX)")


@pytest.mark.needs_data("xquad/xquad.en.json")
@pytest.mark.parametrize("name,backend", [("minilm-squad", "onnx"), ("mpnet-squad-v2", "onnx"),
                                          pytest.param("minilm-squad", "torch-bf16", marks=NEEDS_BF16)])
def test_a_shipped_models_fp32_onnx_and_bf16_answers_are_torchs(name, backend):
    """The fused ONNX graph and the bf16 weights read the same best span as torch on the demo set
    and the first 40 XQuAD-en questions (the issue asks for at least 98%; onnx: all agree; bf16's
    logit error is a twentieth of int8's)."""
    from core.datasets import demo_dataset, load_dataset

    engines = _shipped(name, "torch", backend)
    assert engines[backend].backend_name == backend
    ex = demo_dataset("en").examples + load_dataset("xquad/xquad.en").examples[:40]
    qs, cs = [e.question for e in ex], [e.context for e in ex]
    torch_spans = spans(engines["torch"].predict(qs, cs, n_best=1))
    other_spans = spans(engines[backend].predict(qs, cs, n_best=1))
    assert sum(a == b for a, b in zip(other_spans, torch_spans)) / len(ex) >= 0.98


def test_minilm_int8_keeps_f1_on_the_demo_set():
    """onnx-int8 loses at most 1.0 F1 against torch on the demo set for MiniLM. With per-token int8
    (as with the per-tensor recipe before it) one of the 12 answers differs from torch's, and it is
    int8's that is right: 98.33 against 96.67; a gain, not a loss, so the bound is one-sided."""
    from core.datasets import demo_dataset
    from core.metrics.squad import squad_scores

    engines = _shipped("minilm-squad", "torch", "onnx-int8")
    ex = demo_dataset("en").examples
    refs = {e.id: e.answer_texts for e in ex}
    f1 = {b: squad_scores({e.id: p.text for e, p in zip(ex, engines[b].predict(
        [e.question for e in ex], [e.context for e in ex], n_best=1))}, refs)["f1"] for b in ("torch", "onnx-int8")}
    assert engines["onnx-int8"].backend_name == "onnx-int8"
    assert f1["onnx-int8"] >= f1["torch"] - 1.0
    assert f1["torch"] == pytest.approx(96.6667, abs=1e-3)


def test_int8_sensitivity_groups_every_quantisable_node_and_scores_its_error(model_and_tokenizer, cache, monkeypatch):
    """benchmarks/int8_sensitivity.py: each weight MatMul or fused Attention op of the exported
    graph is in exactly one layer group (and one role group); identical logits score 0 error and
    full agreement, and the all-int8 file's error is a real, positive figure."""
    import onnx

    from benchmarks import int8_sensitivity as sens

    monkeypatch.setenv("QAX_CACHE_DIR", str(cache))
    model, tok = model_and_tokenizer
    src = onnx_runtime.ensure_export(model, onnx_runtime.model_input_names(tok, model), "onnx")
    graph = onnx.load(str(src), load_external_data=False).graph
    groups = sens.node_groups(graph)
    weights = {i.name for i in graph.initializer}
    quantisable = {n.name for n in graph.node if n.op_type == "Attention"
                   or (n.op_type == "MatMul" and any(i in weights for i in n.input))}
    layers = [g for g in groups if g.startswith("layer ")]
    assert len(layers) == model.config.num_hidden_layers
    in_layers = [n for g in layers for n in groups[g]]
    assert len(in_layers) == len(set(in_layers))  # no node in two layers
    assert set().union(*groups.values()) == quantisable

    names = [i.name for i in graph.input]
    enc = tok(QS[:4], CS[:4], padding=True, return_tensors="np")
    batches = [{k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in names}]
    ref = sens.logits(src, batches, 1)
    assert sens.error(ref, ref, batches) == {"logit_mse": 0.0, "argmax_agreement": 1.0}
    int8 = src.parent / "sensitivity-test-int8.onnx"
    sens.quantize(src, int8, [])
    err = sens.error(ref, sens.logits(int8, batches, 1), batches)
    assert err["logit_mse"] > 0 and 0 <= err["argmax_agreement"] <= 1


def test_outlier_split_is_exact_in_fp32_and_finds_a_planted_outlier(model_and_tokenizer, tmp_path):
    """core.qa.backends.int8_split: the split graph computes the fp32 graph's logits (the decomposition is
    exact before quantisation), and a channel made 60x larger than the rest is found on the
    calibration text and kept fp32 in the int8 file."""
    import copy

    import onnx
    import torch

    from core.qa.backends import int8_split

    model, tok = model_and_tokenizer
    names = onnx_runtime.model_input_names(tok, model)
    fp32 = onnx_runtime.ensure_export(model, names, "onnx", folder=tmp_path / "plain")
    graph = onnx.load(str(fp32))
    projections = int8_split.gelu_projections(graph.graph)
    assert len(projections) == model.config.num_hidden_layers  # one FFN output projection per layer
    forced = {projections[0].name: np.array([0, 5]), projections[-1].name: np.array([3])}
    kept = int8_split.split_outliers(graph, forced)
    assert sorted(kept) == sorted(n + int8_split.OUTLIER_SUFFIX for n in forced)
    split_path = tmp_path / "split.onnx"
    onnx.save(graph, str(split_path))
    batches = int8_split.calibration_batches(tok, names)
    import onnxruntime as ort

    def logits(path):
        s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return [s.run(None, b) for b in batches]

    for (a_start, a_end), (b_start, b_end) in zip(logits(fp32), logits(split_path)):
        assert np.allclose(a_start, b_start, atol=1e-5) and np.allclose(a_end, b_end, atol=1e-5)

    planted = copy.deepcopy(model)
    layer = planted.bert.encoder.layer[1].intermediate.dense
    with torch.no_grad():  # channel 7 of layer 1's FFN: 60x its weights and bias
        layer.weight[7] *= 60.0
        layer.bias[7] = layer.bias[7].abs() * 60.0 + 30.0
    fp32_planted = onnx_runtime.ensure_export(planted, names, "onnx", folder=tmp_path / "planted")
    found = int8_split.split_for_int8(fp32_planted, tmp_path / "planted-split.onnx", tok)
    assert len(found) >= 1 and any("layer.1/" in n for n in found)
    maxima = int8_split.channel_maxima(onnx.load(str(fp32_planted)),
                                       int8_split.gelu_projections(onnx.load(str(fp32_planted)).graph),
                                       batches, tmp_path)
    layer1 = next(v for k, v in maxima.items() if "layer.1/" in k)
    assert 7 in int8_split.select_outliers(layer1).tolist()


def _no_native_bf16(monkeypatch):
    """A CPU without native bf16 as both of the engine's sources see it: /proc/cpuinfo's flags
    (read first) and torch's probes (read where the flags cannot be)."""
    import torch

    monkeypatch.setattr(torch_eager, "_cpu_flags_native_bf16", lambda: False)
    for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        monkeypatch.setattr(torch.cpu, probe, lambda: False, raising=False)


@NEEDS_BF16
def test_torch_bf16_answers_with_bf16_weights_and_torchs_spans(make):
    import torch

    torch_eng, bf16_eng = make("torch"), make("torch-bf16")
    assert bf16_eng.backend_name == "torch-bf16" and bf16_eng.backend_message is None
    assert next(bf16_eng._forward_impl.model.parameters()).dtype == torch.bfloat16
    assert next(bf16_eng.model.parameters()).dtype == torch.float32  # the engine's own stays fp32
    windows = build_windows(torch_eng.tokenizer, QS, CS, max_length=384, stride=128)[:4]
    (t_start, t_end), (b_start, b_end) = torch_eng._forward(windows), bf16_eng._forward(windows)
    assert b_start.dtype == np.float32 and 0 < np.abs(b_start - t_start).max() < 0.05
    assert np.abs(b_end - t_end).max() < 0.05
    assert spans(bf16_eng.predict(QS, CS)) == spans(torch_eng.predict(QS, CS))


def test_torch_bf16_without_native_bf16_falls_back_to_torch_with_the_reason(make, monkeypatch, caplog):
    _no_native_bf16(monkeypatch)
    with caplog.at_level(logging.WARNING):
        eng = make("torch-bf16")
    assert eng.backend_name == "torch" and "no native bf16" in eng.backend_message
    assert any("no native bf16" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert spans(eng.predict(QS, CS)) == spans(make("torch").predict(QS, CS))


def test_a_card_choosing_bf16_gives_way_where_bf16_is_not_native(tiny_qa_dir, tmp_path, monkeypatch):
    """The card's choice was measured on a CPU with AMX; on one without, the rule picks again among
    the card's other measured backends (the fastest within 0.5 F1 of torch)."""
    from core.qa import registry

    carded = tmp_path / "carded"
    carded.mkdir()
    for f in tiny_qa_dir.iterdir():
        (carded / f.name).symlink_to(f)
    tags = compat.FINGERPRINT_TAGS
    measured = {"torch": {"f1": 80.0, "questions_per_second": 40, "recipe": tags["torch"]},
                "torch-bf16": {"f1": 80.1, "questions_per_second": 120, "recipe": tags["torch-bf16"]},
                "onnx": {"f1": 80.0, "questions_per_second": 45, "recipe": tags["onnx"]},
                "onnx-int8": {"f1": 79.2, "questions_per_second": 100, "recipe": tags["onnx-int8"]}}
    (carded / "model_card.json").write_text(json.dumps({"backends": {"default": "torch-bf16", "backends": measured}}))
    toml = tmp_path / "models.toml"
    toml.write_text(f'[[model]]\nname = "carded"\npath = "{carded}"\n')
    if NATIVE_BF16:
        assert registry.get_entry("carded", toml).default_backend() == "torch-bf16"
    _no_native_bf16(monkeypatch)
    assert registry.get_entry("carded", toml).default_backend() == "onnx"  # int8 is 0.8 below torch
    measured["onnx-int8"]["f1"] = 79.6
    (carded / "model_card.json").write_text(json.dumps({"backends": {"default": "torch-bf16", "backends": measured}}))
    assert registry.get_entry("carded", toml).default_backend() == "onnx-int8"


def test_the_cpus_flags_say_what_torchs_probes_say_about_native_bf16():
    """bf16_unavailable reads /proc/cpuinfo (no torch import for the Ask page's model list);
    torch.cpu's own probes give the same answer on this CPU."""
    import torch

    flags = torch_eager._cpu_flags_native_bf16()
    if flags is None:
        pytest.skip("no /proc/cpuinfo here")
    probes = [getattr(torch.cpu, n, None) for n in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    assert flags == any(p() for p in probes if callable(p))
    assert (torch_eager.bf16_unavailable("cpu") is None) == flags == (
        torch_eager.bf16_unavailable(torch.device("cpu")) is None)


def test_the_ask_pages_model_list_imports_no_runtime():
    """Each card's default backend is known without importing torch, OpenVINO, nncf or ONNX
    Runtime: the first screen draws without them (they load with the first answer)."""
    probe = ("import sys\nfrom core.qa import registry\n"
             "names = registry.models_for_language('en', registry.installed_models())\n"
             "print(sorted(m for m in ('torch', 'openvino', 'nncf', 'onnxruntime') if m in sys.modules))")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
