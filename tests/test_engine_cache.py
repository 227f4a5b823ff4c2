"""The engine cache (core.qa.engine_cache) and the warm start (core.qa.warm) with real engines:
the shipped minilm models on torch (a few seconds a load, no ONNX export), the budget given as a
function so that each test decides when the next load no longer fits."""
from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest

from core.qa import engine_cache, warm
from core.qa.engine import EngineSettings
from core.qa.engine_cache import EngineCache as _EngineCache
from core.qa.registry import build_engine, get_entry

TORCH = EngineSettings(backend="torch")
A, B, C = "minilm-squad", "minilm-squad-noise", "minilm-squad-v2"
QUESTION, CONTEXT = "What is the capital of Germany?", "Berlin is the capital of Germany."


@pytest.fixture(autouse=True)
def _installed():
    for name in (A, B, C):
        if not get_entry(name).is_installed():
            pytest.skip(f"{name} is not installed")


def EngineCache(budget=None):  # the class, loading as the process's cache does
    return _EngineCache(budget, entry_for=get_entry, build=build_engine)


class Budget:
    """A budget the test sets as it goes (MB)."""

    def __init__(self, mb: float = 1e9):
        self.mb = mb

    def __call__(self) -> float:
        return self.mb


def test_a_second_load_is_a_hit_and_other_settings_share_the_weights():
    cache = EngineCache(Budget())
    first = cache.get(A, TORCH)
    assert cache.get(A, TORCH) is first
    assert (cache.misses, cache.hits) == (1, 1)
    capped = cache.get(A, EngineSettings(backend="torch", max_answer_tokens=5))
    assert capped is not first and capped.model is first.model   # a view, not a second copy
    assert capped.settings.max_answer_tokens == 5 and first.settings.max_answer_tokens == 30
    assert len(cache.loaded()) == 1 and cache.misses == 1
    assert capped.answer(QUESTION, CONTEXT).best.text == first.answer(QUESTION, CONTEXT).best.text == "Berlin"
    [held] = cache.loaded()
    # measured: at least the fp32 weights (22.7M parameters, 87 MB), which it holds on torch
    assert held.mb >= first.torch_bytes() / engine_cache.MB > 80
    assert held.backend == "torch" and held.seconds > 0


def test_the_least_recently_used_goes_when_a_load_would_pass_the_budget():
    budget = Budget()
    # each model costs its tensor bytes (87 MB each), not its RSS growth: under CI's load the third
    # load once grew 10 MB more than the second, and the budget below, sized to the megabyte, then
    # pushed out A as well
    cache = _EngineCache(budget, entry_for=get_entry, build=build_engine, measure=lambda: 0.0)
    a = cache.get(A, TORCH)
    b = cache.get(B, TORCH)
    assert cache.get(A, TORCH) is a            # A used after B: B is now the least recently used
    gone = weakref.ref(b)
    del b
    budget.mb = cache.total_mb() + 10          # room for neither a third model nor more
    c = cache.get(C, TORCH)
    assert cache.evicted == [B]
    assert [h.name for h in cache.loaded()] == [A, C]
    assert cache.total_mb() <= budget.mb or len(cache.loaded()) == 1
    gc.collect()
    assert gone() is None                      # nothing else held it: its memory went back
    assert cache.get(A, TORCH) is a and cache.get(C, TORCH) is c
    # B again: a new load, which pushes out A (used before C's last use)
    cache.get(B, TORCH)
    assert cache.evicted == [B, A] and cache.misses == 4


def test_a_model_alone_over_the_budget_still_answers():
    cache = EngineCache(Budget(1))
    eng = cache.get(A, TORCH)
    assert [h.name for h in cache.loaded()] == [A]
    assert eng.answer(QUESTION, CONTEXT).best.text == "Berlin"
    cache.get(B, TORCH)
    assert [h.name for h in cache.loaded()] == [B] and cache.evicted == [A]


def test_evict_and_clear_let_go():
    cache = EngineCache(Budget())
    ref = weakref.ref(cache.get(A, TORCH))
    assert cache.evict(A) and not cache.evict(A)
    gc.collect()
    assert ref() is None and cache.loaded() == []


def test_a_loaded_engine_is_frozen_out_of_full_collections_until_it_is_let_go_of():
    gc.unfreeze()
    cache = EngineCache(Budget())
    eng = cache.get(A, TORCH)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000                     # the engine, its tokenizer, the libraries: skipped by gc
    eng.cycle = [eng]                          # an engine in a reference cycle: only a collection frees it
    ref = weakref.ref(eng)
    del eng
    assert cache.evict(A)                      # thawed first, so the cycle is collected
    gc.collect()
    assert ref() is None
    gc.unfreeze()


def test_warm_start_loads_in_a_thread_and_an_asker_waits_for_that_load():
    cache = EngineCache(Budget())
    warming = warm.WarmStart([A], TORCH)
    thread = threading.Thread(target=warming.run, args=(cache,))
    thread.start()
    deadline = time.monotonic() + 60
    while not cache.loading() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    seen = cache.loading()
    eng = cache.get(A, TORCH)                  # while the warm start loads: waits for its load
    thread.join()
    assert warming.loaded == [A] and not warming.failed and warming.finished is not None
    assert cache.misses == 1 and len(cache.loaded()) == 1   # one load, not two
    assert cache.get(A, TORCH) is eng
    if seen:   # caught mid-load (a load on a busy machine takes seconds)
        assert seen[0].line().startswith(f"Loading {A} (torch")
    assert "loaded 1 of 1 models" in warming.summary()
    assert warming.classes_imported == ["bert"]


def test_warm_start_imports_the_model_class_a_first_attribution_would_wait_for():
    # in a fresh process: transformers imports a model class only when it is first asked for
    module = "transformers.models.bert.modeling_bert"
    code = (f"import sys; from core.qa.warm import import_model_classes; before = {module!r} in sys.modules; "
            "done = import_model_classes(['bert', 'no-such-type', '']); "
            f"print(before, done, {module!r} in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "['bert']", "True"]


def test_warm_start_leaves_a_model_its_card_says_is_over_the_budget():
    entry = get_entry(A)
    need = engine_cache.card_mb(entry, entry.default_backend())
    if need is None:
        pytest.skip(f"{A}'s card has no measured resident size (benchmarks/model_memory.py --card)")
    cache = EngineCache(Budget(need / 2))
    warming = warm.WarmStart([A])
    warming.run(cache)
    assert warming.loaded == [] and A in warming.skipped and cache.misses == 0
    assert "would pass the model memory budget" in warming.skipped[A]


def test_the_budget_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("QAX_MODEL_MEMORY_MB", "512")
    assert EngineCache().budget_mb() == 512
    monkeypatch.setenv("QAX_MODEL_MEMORY_MB", "lots")
    with pytest.raises(ValueError, match="QAX_MODEL_MEMORY_MB='lots'"):
        EngineCache().budget_mb()


@pytest.mark.slow
def test_an_onnx_engine_keeps_one_copy_and_brings_torch_back_when_asked():
    """minilm-squad's default (its card: onnx-int8) answers without its torch weights, with the
    fingerprint it had with them; a view that reads ``model`` (attribution) loads them again."""
    cache = EngineCache(Budget())
    eng = cache.get(A, EngineSettings(backend="onnx-int8"))
    if eng.backend_name != "onnx-int8":
        pytest.skip(f"onnx-int8 does not run here: {eng.backend_message}")
    assert not eng.holds_torch and eng.torch_bytes() == 0
    fingerprint = eng.fingerprint()
    assert eng.answer(QUESTION, CONTEXT).best.text == "Berlin"
    [held] = cache.loaded()
    before = held.mb_now()
    assert eng.model.get_input_embeddings() is not None   # loaded again, once
    assert eng.holds_torch and eng.torch_reloads == 1 and eng.fingerprint() == fingerprint
    assert held.mb_now() > before + 80
    with_torch = cache.get(A, TORCH)
    assert with_torch.fingerprint_with("onnx-int8") == fingerprint


@pytest.mark.slow
def test_an_attribution_gives_the_torch_weights_back_when_it_ends():
    """Attribution reads the torch weights of an engine that answers with ONNX; the app's run
    (core.explain.run.releasing) lets go of them once the run ends, so the cache's figure is what
    the model holds again; the attribution's result is kept."""
    from core.explain import explain
    from core.explain.run import releasing

    cache = EngineCache(Budget())
    eng = cache.get(A, EngineSettings(backend="onnx-int8"))
    if eng.backend_name != "onnx-int8":
        pytest.skip(f"onnx-int8 does not run here: {eng.backend_message}")
    [held] = cache.loaded()
    without = held.mb_now()
    task = releasing(eng, lambda progress: explain(eng, QUESTION, CONTEXT, n_steps=4, progress=progress))
    result = task(lambda phase, done, total: None)
    assert result.answer.text == "Berlin" and eng.torch_reloads == 1
    assert not eng.holds_torch and eng.torch_bytes() == 0 and held.mb_now() <= without + 1
    assert eng.answer(QUESTION, CONTEXT).best.text == "Berlin"   # still answers, with its graph


def test_a_trim_that_thaws_frees_a_cycle_that_lived_through_a_freeze():
    # a closed session's state that a model load froze with the heap (components/session_memory)
    from core import memory

    class State:
        pass

    state = State()
    state.me = state
    ref = weakref.ref(state)
    memory.freeze_survivors()
    del state
    memory.trim()
    assert ref() is not None                   # frozen: a plain collection skips it
    memory.trim(thaw=True)
    assert ref() is None
    gc.unfreeze()


def test_with_nobody_left_the_cache_goes_back_to_what_the_warm_start_loaded(monkeypatch):
    """components/session_memory calls warm.rest once the last browser has gone: a model asked
    for later (a German item's) is let go of, the warm start's stays, and the torch weights an
    attribution brought back to it are let go of again."""
    cache = EngineCache(Budget())
    INT8 = EngineSettings(backend="onnx-int8")
    warming = warm.WarmStart([A], INT8)
    monkeypatch.setattr(warm, "_current", warming)
    assert warm.rest(cache) == []              # not finished loading: nothing is let go of
    warming.run(cache)
    kept = cache.get(A, INT8)
    if kept.backend_name != "onnx-int8":
        pytest.skip(f"onnx-int8 does not run here: {kept.backend_message}")
    later = weakref.ref(cache.get(B, TORCH))
    kept.model                                 # an attribution reads the torch weights
    assert kept.holds_torch
    assert warm.rest(cache) == [B]
    gc.collect()
    assert later() is None and [h.name for h in cache.loaded()] == [A]
    assert not kept.holds_torch and cache.get(A, INT8) is kept
    hits = cache.hits
    assert cache.peek(A, INT8, count=False) is kept and cache.hits == hits   # a look is not a use
    assert kept.answer(QUESTION, CONTEXT).best.text == "Berlin"
    monkeypatch.setattr(warm, "_current", None)   # no warm start: nothing stays
    assert warm.rest(cache) == [A] and cache.loaded() == []
