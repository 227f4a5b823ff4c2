"""Heatmaps' "Natural against synthetic" section (components.heatmaps.natural_match) on a stored comparison."""
from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest


def _section() -> None:
    from components.heatmaps import natural_match

    natural_match.render()


def _result() -> dict:
    from core.collect import noise_profiles as nm

    natural = nm.profile("natural:asr_human", ["a", "b"], ["Who won?", "Where is it?"], ["who one", "where is it"])
    close = nm.profile("keyboard_Q:p=0.1", ["a", "b"], ["Who won?", "Where is it?"], ["Who wno?", "Where is it?"])
    far = nm.profile("<b>far</b>", ["a", "b"], ["Who won?", "Where is it?"], ["x y z", "x y z w"])
    ranking = nm.rank(natural, {p.name: p for p in (close, far)})
    return {"distance": nm.DISTANCE, "settings": {"conditions": ["asr_human"], "sample": 2, "seed": 0,
                                                  "asr_sample": 0, "cheap": [], "asr": [], "not applied": {}},
            "profiles": [{"questions": "all", **natural.summary()}], "ranking": ranking,
            "closest": {"asr_human": ranking[0]}}


def test_a_stored_comparison_shows_its_closest_setting_and_escapes_names(tmp_path, monkeypatch):
    folder = tmp_path / "noise_match"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(_result()))
    (folder / "broken.json").write_text("{not json")
    # monkeypatch, not os.environ in the script: AppTest runs it in this process, and a cache
    # directory left set sent a later test's server (tests/test_server_launcher.py, on the same
    # xdist worker) to an empty cache, where it converted and quantised the models again
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))
    at = AppTest.from_function(_section, default_timeout=60).run()
    assert not at.exception, at.exception
    options = at.selectbox(key="nm_file").options
    assert options[0] == "run.json" and "broken.json" not in options     # the unreadable file is left out
    assert all(o.endswith("(bundled)") for o in options[1:])             # then those measured for the docs
    closest = at.dataframe[0].value
    assert closest["closest setting"].tolist() == ["keyboard_Q:p=0.1"]
    assert closest["natural"].tolist() == ["natural:asr_human"]


def test_the_distance_figure_escapes_stored_names():
    from components.heatmaps.natural_match import distance_figure

    fig = distance_figure(_result())
    assert list(fig.data[0].x) == ["keyboard_Q:p=0.1", "&lt;b&gt;far&lt;/b&gt;"]
    assert fig.data[0].z[0][0] < fig.data[0].z[0][1]


def test_with_nothing_stored_the_bundled_comparisons_show(tmp_path, monkeypatch):
    from components.heatmaps import natural_match

    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))
    found = natural_match.stored_results()
    assert found and all(name.endswith(" (bundled)") for name in found)
    for result in found.values():
        for condition, best in result["closest"].items():
            mine = [r["distance"] for r in result["ranking"] if r["natural"] == f"natural:{condition}"]
            assert best["distance"] == min(mine)


def test_the_bundled_cheap_comparison_shows_its_flip_agreement(tmp_path, monkeypatch):
    """The speech researcher's audit (2026-11-29): the tab never showed the kappa noise_match
    computes (docs/results/natural-noise.md: asr_human against keyboard_Q:p=0.25, 80 and 90 flips of
    300, 31 shared, kappa 0.11 [-0.00, 0.24])."""
    from components.heatmaps import natural_match

    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))
    cheap = next(r for name, r in natural_match.stored_results().items() if name.startswith("natural-300-cheap"))
    rows = {r["natural"]: r for r in natural_match.flip_rows(cheap)}
    human = rows["natural:asr_human"]
    assert (human["setting"], human["n"], human["flips natural"], human["flips setting"], human["both"]) == (
        "keyboard_Q:p=0.25", 300, 80, 90, 31)
    assert human["kappa [95%]"] == "0.11 [0.00, 0.24]"
    assert rows["natural:disfluent"]["kappa [95%]"] == "0.34 [0.21, 0.46]"


def _agreement_section() -> None:
    from components.trial_agreement import agreement_panel

    agreement_panel(None)


def test_the_speech_trials_agreement_offers_natural_sets_without_a_recording():
    at = AppTest.from_function(_agreement_section, default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.radio(key="agree_on").options == ["this trial's recordings", "HeySQuAD (real speech)",
                                                "Disfl-QA (real disfluencies)"]
    assert any("Nothing to compare yet" in m.value for m in at.markdown)
    at.radio(key="agree_on").set_value("HeySQuAD (real speech)").run()
    assert not at.exception, at.exception
    assert at.number_input(key="agree_nat_n").value == 200 and at.button(key="agree_nat_run")
