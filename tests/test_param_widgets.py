"""components/params.py draws a perturbation's parameter widgets from its declarations
(core.perturb.base.Param). Checked on every registered perturbation through AppTest: the Sweeps
form and the Variants form render without an exception, a bounded int becomes a range slider,
and a widely bounded int (paraphrase_lexical_Q's ``min_frequency``, 0..10**9) a single number
field: before the fix its "range" listed a billion values and the server ran out of memory as
soon as a user picked the perturbation on the Sweeps page."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.perturb import registry
from core.perturb.base import MAX_SWEEP_INTS, Param


def test_wide_int_bounds_offer_one_value_not_every_value():
    assert Param("min_frequency", 500, min=0, max=10**6).sweep_values == ()
    assert Param("n_words", 1, min=1, max=10).sweep_values == tuple(range(1, 11))
    for p in registry.all_perturbations():
        for param in p.config_spec().values():
            assert len(param.sweep_values) <= max(MAX_SWEEP_INTS, len(param.choices or ())), (p.id, param.name)


def _forms(pid: str, mode: str):
    import streamlit as st

    from components.params import param_form, sweep_form
    from core.perturb import registry

    form = sweep_form if mode == "sweep" else param_form
    st.session_state["result"] = form(registry.get(pid), "t")


def test_sweep_form_of_paraphrase_lexical_q():
    at = AppTest.from_function(_forms, args=("paraphrase_lexical_Q", "sweep"), default_timeout=60).run()
    assert not at.exception
    assert at.session_state["result"]["min_frequency"] == [500]
    assert at.session_state["result"]["n_words"] == [1]
    labels = {w.label for w in at.number_input}
    assert "paraphrase_lexical_Q · min_frequency" in labels
    assert any(s.label.startswith("paraphrase_lexical_Q · n_words (range") for s in at.slider)


def _every_form(mode: str):
    """Every perturbation's form on one page, each under its own keys; a form that raises is
    recorded by name and the next one is drawn."""
    import streamlit as st

    from components.params import param_form, sweep_form
    from core.perturb import registry

    form = sweep_form if mode == "sweep" else param_form
    results, errors = {}, {}
    for p in registry.all_perturbations():
        try:
            results[p.id] = form(p, f"t-{p.id}")
        except Exception as e:   # the test names each one that fails
            errors[p.id] = f"{type(e).__name__}: {e}"
    st.session_state["results"], st.session_state["errors"] = results, errors


def test_every_perturbation_draws_both_forms():
    for mode in ("sweep", "variants"):
        at = AppTest.from_function(_every_form, args=(mode,), default_timeout=120).run()
        assert not at.exception, (mode, at.exception)
        assert at.session_state["errors"] == {}, mode
        results = at.session_state["results"]
        assert len(results) == len(registry.all_perturbations()) >= 60
        for p in registry.all_perturbations():
            assert set(results[p.id]) == set(p.config_spec()), (p.id, mode)
            if mode == "variants":
                # with nothing touched, every widget hands back the declared default
                assert results[p.id] == {n: prm.default for n, prm in p.config_spec().items()}, p.id


def test_widgets_move_by_the_declared_step():
    """LIT's Scalar.step: a probability moves by 0.05, a word frequency by 100, and a range of ints
    with a step runs one spec per step."""
    assert registry.get("keyboard_Q").config_spec()["p"].widget_step == 0.05
    at = AppTest.from_function(_forms, args=("keyboard_Q", "variants"), default_timeout=60).run()
    assert not at.exception
    (p_slider,) = [s for s in at.slider if s.label == "keyboard_Q · p"]
    assert p_slider.proto.step == 0.05
    at = AppTest.from_function(_forms, args=("paraphrase_lexical_Q", "variants"), default_timeout=60).run()
    (freq,) = [n for n in at.number_input if n.label == "paraphrase_lexical_Q · min_frequency"]
    assert freq.proto.step == 100 and freq.value == 500
    freq.increment().run()
    assert at.session_state["result"]["min_frequency"] == 600
