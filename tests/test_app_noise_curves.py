"""Heatmaps' "F1 against measured noise" section (AppTest) on the toy sweep of test_app_heatmaps."""
import json

from rendered import open_tab
from streamlit.testing.v1 import AppTest
from test_app_heatmaps import PAGE

from core.sweeps.analysis.curves import sweep_curves


def test_heatmaps_noise_curve_section_draws_core_curves(sweep_db):
    at = open_tab(AppTest.from_file(PAGE, default_timeout=120).run(), "Noise curves")
    assert not at.exception, at.exception
    expected = sweep_curves(sweep_db, "toy-sweep", "cer", seed=0)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    spec = next(s for s in charts if "measured question noise" in s["layout"]["title"]["text"])
    lines = {t["name"]: t for t in spec["data"] if "90%" not in t["name"] and "break" not in t["name"]}
    assert set(lines) == {"fake-a", "fake-b"}
    for model, trace in lines.items():
        assert trace["y"] == [b.f1 for b in expected.bins if b.model == model and b.f1 is not None]
    breaks = next(d.value for d in at.dataframe if "break point (bin)" in d.value.columns)
    assert list(breaks["model"]) == ["fake-a", "fake-b"]
    shown = {m: ("none" if bp is None else f"CER % {expected.break_bin(m)}") for m, bp in expected.breaks.items()}
    assert dict(zip(breaks["model"], breaks["break point (bin)"])) == shown
    assert all(v == "none" or "-" in v for v in shown.values())   # a bin, "0-2.5", not its edge read as a level
    # the toy sweep's five questions: TUQ changes their case only, drop_qmark_Q their punctuation
    # only: 10 variants at CER 0; BLEU (uncased, punctuation tokenised) misses only TUQ's 5
    assert expected.unseen == 10 and sweep_curves(sweep_db, "toy-sweep", "bleu", seed=0).unseen == 5
    assert any(f"{expected.unseen:,} scored variants changed only case or punctuation (" in c.value for c in at.caption)
    assert len(lines["fake-a"]["y"]) >= 2 and any(bp is not None for bp in expected.breaks.values())
    at.radio(key="hm_curve_measure").set_value("bleu").run()
    assert not at.exception
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any("BLEU" in s["layout"]["title"]["text"] for s in charts)
