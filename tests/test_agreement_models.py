"""core.collect.flip_agreement on a real trial and a real model (slow: speech synthesis, recognition,
minilm-squad-v2): the 12 English demo questions read by flite's slt voice (the stand-in speaker,
tests/trial_fixture.py) and transcribed by PocketSphinx 5.1.1; TTS -> ASR by flite kal16; keyboard
noise p = 0.25 under seed 0. Every figure below was read off the per-question table by hand."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from trial_fixture import demo_trial

from core.collect import flip_agreement as agreement

ROOT = Path(__file__).resolve().parents[1]
NATURAL, TTS, KEYBOARD = "natural:pocketsphinx", "tts:flite:kal16>pocketsphinx", "keyboard:p=0.25"


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    return demo_trial(tmp_path_factory.mktemp("trials"), n=12)


def test_flips_and_kappa_of_minilm_on_the_demo_trial(trial):
    from core.qa.registry import load_engine

    examples, conditions, left_out = agreement.trial_conditions(trial, ["pocketsphinx"], tts_engines=["pocketsphinx"])
    assert left_out == [] and list(conditions) == [NATURAL, TTS, KEYBOARD] and len(examples) == 12
    by_q = {ex.question: i for i, ex in enumerate(examples)}
    museum = by_q["Who founded the Greyford Clock Museum?"]
    assert conditions[NATURAL][museum] == "you found in the grey for o'clock news am"
    assert conditions[TTS][museum] == "who founded the preferred clock museum"
    result = agreement.compare(examples, conditions, {"minilm-squad-v2": load_engine("minilm-squad-v2")}, seed=0)
    rows = {r["question"]: r for r in result.rows}
    # the speaker's garbled museum question moves the answer off the founder; the synthetic voice's does not
    assert rows["Who founded the Greyford Clock Museum?"]["clean answer"] == "Amina Okafor"
    assert rows["Who founded the Greyford Clock Museum?"][f"{NATURAL} flip"] is True
    assert rows["Who founded the Greyford Clock Museum?"][f"{TTS} answer"] == "Amina Okafor"
    flipped = {name: sorted(q for q, r in rows.items() if r[f"{name} flip"]) for name in result.conditions}
    assert flipped == {NATURAL: ["Who founded the Greyford Clock Museum?"], TTS: [],
                       KEYBOARD: ["In which village was the apple first described?",
                                  "Where was the founder a student?"]}
    k = {(r["a"], r["b"]): r for r in result.kappas}
    # natural against keyboard: both 0, only natural 1, only keyboard 2, neither 9: p_o = 9/12,
    # p_e = (1/12)(2/12) + (11/12)(10/12) = 112/144, kappa = (108 - 112) / (144 - 112) = -0.125
    nk = k[(NATURAL, KEYBOARD)]
    assert (nk["both flip"], nk["only a"], nk["only b"], nk["neither"]) == (0, 1, 2, 9)
    assert nk["kappa"] == pytest.approx(-0.125) and nk["fisher p"] == 1.0     # no sign of flips going together
    assert nk["low"] is None and nk["note"] == "too few flips for an interval: 1 and 2 of 12, none shared"
    assert k[(NATURAL, TTS)]["kappa"] is None and k[(NATURAL, TTS)]["note"] == f"{TTS} flips no question"


def test_cli_prints_the_kappa_table_and_writes_its_files(trial, tmp_path):
    out_json, out_csv = tmp_path / "agree.json", tmp_path / "kappa.csv"
    proc = subprocess.run([sys.executable, "-m", "core.collect.agreement", "--trial", str(trial.path),
                           "--model", "minilm-squad-v2", "--seed", "0", "--n-boot", "200",
                           "--json", str(out_json), "--csv", str(out_csv)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (f"kappa  {NATURAL} ~ {KEYBOARD}: -0.12, Fisher p = 1.000 (agreement 75.0%, both flip 0); "
            "too few flips for an interval: 1 and 2 of 12, none shared") in proc.stdout
    assert f"flips  {NATURAL}" in proc.stdout and "1/12" in proc.stdout
    data = json.loads(out_json.read_text())
    assert data["settings"]["n_boot"] == 200 and data["settings"]["trial"] == trial.id
    assert len(data["questions"]) == 12 and len(data["kappa"]) == 3
    header = out_csv.read_text().splitlines()[0]
    assert header.startswith("model,a,b,n,flips a,flips b,both flip")
