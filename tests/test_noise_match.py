"""Natural against synthetic noise (core.collect.noise_profiles): profiles, the W1 distance and the closest
setting, on hand-built distributions whose closest setting is known."""
from __future__ import annotations

import json
import random

import pytest

from core.collect import noise_profiles as nm
from tests.test_natural import natural_dir  # noqa: F401 (the fixture)

BASE = "what year did the war in the north of the country end after the long siege"   # 16 words


def _with_errors(k: int, kind: str, rng: random.Random) -> str:
    """BASE with ``k`` word errors of one kind (sub: a word replaced; ins: a word added; del: one dropped)."""
    words = BASE.split()
    chosen = set(rng.sample(range(len(words)), k))     # k different words
    out = []
    for i, w in enumerate(words):
        if i not in chosen:
            out.append(w)
        elif kind == "sub":
            out.append("zz" + w)
        elif kind == "ins":
            out += ["uh", w]
    return " ".join(out)


def _profile(name: str, counts: list[int], kind: str = "sub", seed: int = 0) -> nm.Profile:
    rng = random.Random(seed)
    noisy = [_with_errors(k, kind, rng) for k in counts]
    return nm.profile(name, [f"q{i}" for i in range(len(counts))], [BASE] * len(counts), noisy)


def test_profile_counts_edits_per_question_after_asr_normalisation():
    p = nm.profile("x", ["a", "b", "c"], ["Who won, then?", "Where is it?", "What is it?"],
                   ["who one then", "where is it", "what uh is it really"])
    assert p.wer.tolist() == [1 / 3, 0.0, 2 / 3]          # case and punctuation do not count
    assert (p.insertions.tolist(), p.deletions.tolist(), p.substitutions.tolist()) == ([0, 0, 2], [0, 0, 0], [1, 0, 0])
    assert p.words_changed.tolist() == [1, 0, 2]
    assert p.mix() == {"insertions": 2 / 3, "deletions": 0.0, "substitutions": 1 / 3}
    row = p.summary()
    assert (row["n"], row["unchanged %"], row["words changed"]) == (3, 33.3, 1.0)


def test_w1_of_shifted_distributions_is_the_shift():
    natural = _profile("natural", [0, 1, 2, 3] * 5)
    shifted = _profile("shifted", [1, 2, 3, 4] * 5)   # every question one more substitution: WER + 1/16
    d = nm.distance(natural, shifted)
    assert d["w1_wer"] == pytest.approx(1 / 16)
    assert d["mix_tv"] == 0.0                         # substitutions both
    assert nm.distance(natural, natural)["distance"] == 0.0
    assert nm.distance(natural, shifted)["distance"] == pytest.approx(nm.distance(shifted, natural)["distance"])


def test_the_closest_setting_is_the_one_with_the_same_distribution():
    counts = [0] * 6 + [1] * 8 + [2] * 4 + [4] * 2                      # a natural-looking spread
    natural = _profile("natural", counts, seed=1)
    same = _profile("same spread", list(reversed(counts)), seed=2)      # same counts, other questions
    mean_only = _profile("same mean, no spread", [1 if i % 10 >= 3 else 2 for i in range(20)], seed=3)
    heavier = _profile("heavier", [k + 2 for k in counts], seed=4)
    lighter = _profile("lighter", [0] * 20, seed=5)
    rows = nm.rank(natural, {p.name: p for p in (heavier, mean_only, lighter, same)})
    assert [r["setting"] for r in rows][0] == "same spread"
    assert rows[0]["distance"] == 0.0
    assert [r["setting"] for r in rows][-1] == "heavier"
    assert all(a["distance"] <= b["distance"] for a, b in zip(rows, rows[1:]))


def test_the_mix_tells_insertions_from_substitutions_with_the_same_rates():
    natural = _profile("natural", [1, 2] * 10, kind="ins")
    subs = _profile("subs", [1, 2] * 10, kind="sub")
    d = nm.distance(natural, subs)
    assert d["w1_wer"] == pytest.approx(0.0)
    assert d["mix_tv"] == pytest.approx(1.0)


def test_rank_compares_on_shared_questions_only():
    natural = _profile("natural", [1] * 10)
    part = _profile("part", [1] * 4)          # q0..q3: a TTS -> ASR setting run on a sample
    rows = nm.rank(natural, {"part": part})
    assert rows[0]["n"] == 4 and rows[0]["distance"] == 0.0


@pytest.mark.needs_data("xquad/xquad.en.json")
def test_keyboard_noise_at_a_known_rate_is_found_among_other_rates():
    """"Natural" questions made by keyboard_Q at p=0.3 (seed 7): among p = 0.05, 0.3 and 0.8 drawn under
    another seed, the closest setting is p = 0.3."""
    from core import config
    from core.datasets import load_squad

    examples = load_squad(config.data_dir() / "xquad/xquad.en.json").examples[:150]
    hidden, _ = nm.synthetic_questions(examples, "keyboard_Q:p=0.3", seed=7)
    natural = nm.profile("natural", [e.id for e in examples], [e.question for e in examples], hidden)
    settings = {}
    for p in ("0.05", "0.3", "0.8"):
        questions, _ = nm.synthetic_questions(examples, f"keyboard_Q:p={p}", seed=0)
        settings[p] = nm.profile(p, [e.id for e in examples], [e.question for e in examples], questions)
    assert nm.rank(natural, settings)[0]["setting"] == "0.3"


def test_run_match_on_a_natural_set(natural_dir, monkeypatch):  # noqa: F811 (the fixture)
    monkeypatch.setenv("QAX_DATA_DIR", str(natural_dir))
    result = nm.run_match(["asr_human"], sample=None, settings=["keyboard_Q:p=0.1|0.9", "disfluency_Q:kind=filler"],
                          data_dir=natural_dir)
    assert result["settings"]["cheap"] == ["keyboard_Q:p=0.1", "keyboard_Q:p=0.9", "disfluency_Q:kind=filler"]
    assert {r["setting"] for r in result["ranking"]} == set(result["settings"]["cheap"])
    assert result["closest"]["asr_human"] == result["ranking"][0]
    natural = [p for p in result["profiles"] if p["condition"] == "natural:asr_human"]
    assert natural[0]["n"] == 2 and natural[0]["unchanged %"] == 50.0     # "who settled in normandy" as typed
    json.dumps(result)


def test_bad_settings_are_one_clear_message():
    with pytest.raises(nm.NoiseMatchError, match="no_such_Q"):
        nm.synthetic_questions([], "no_such_Q")
    with pytest.raises(nm.NoiseMatchError, match="at most"):
        nm.expand_settings([f"keyboard_Q:p={p / 100}" for p in range(1, 70)])


def test_cli_prints_the_closest_setting(natural_dir, monkeypatch, capsys, tmp_path):  # noqa: F811
    from core.collect.noise_match import main

    monkeypatch.setenv("QAX_DATA_DIR", str(natural_dir))
    out = tmp_path / "match.json"
    assert main(["--natural", "asr_human", "--setting", "keyboard_Q:p=0.1|0.5", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "natural:asr_human" in printed and "keyboard_Q:p=0.1" in printed
    assert json.loads(out.read_text())["closest"]["asr_human"]["setting"].startswith("keyboard_Q")
    with pytest.raises(SystemExit) as stop:
        main(["--natural", "nonsense"])
    assert stop.value.code == 2 and "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_profile_of_nothing_is_refused():
    with pytest.raises(nm.NoiseMatchError):
        nm.distance(nm.profile("a", [], [], []), nm.profile("b", [], [], []))


@pytest.mark.parametrize("setting, message", [
    ("keyboard_Q:p=abc", "parameter 'p' must be float, got 'abc'"),
    # a "+" before a word that is no perturbation id stays in the value: say so (the LLM audit's typo)
    ("keyboard_Q:p=0.3+qwen", "got '0.3+qwen' ('+qwen' does not start a chained step: 'qwen' is not a "
                              "perturbation id)"),
    ("keyboard_Q:p=2", "parameter 'p' must be in [0.0, 1.0], got 2.0"),
    ("no_such_Q", "unknown perturbation id 'no_such_Q'"),
    ("asr_Q:voice=nosuchvoice:engine=whisper-base", "parameter 'voice' must be one of"),
    ("asr_Q:engine=nosuchengine", "parameter 'engine' must be one of"),
    ("TLQ+keyboard_Q:p=7", "parameter 'p' must be in [0.0, 1.0], got 7.0"),
    ("file:heysquad/x.json", "a challenge file is data"),
])
def test_check_settings_refuses_what_a_sweep_would_refuse(setting, message):
    with pytest.raises(nm.NoiseMatchError) as err:
        nm.check_settings(["keyboard_Q:p=0.1", setting])
    assert message in str(err.value) and str(err.value).startswith("setting '")
    assert nm.check_settings(["disfluency_Q:kind=any:n=1|2"]) == ["disfluency_Q:kind=any:n=1",
                                                                 "disfluency_Q:kind=any:n=2"]


def test_check_settings_asks_whether_a_voice_runs_here_only_when_asked(monkeypatch):
    from core.speech import noise

    asked = []
    monkeypatch.setattr(noise, "why_unavailable", lambda voice, engine: asked.append((voice, engine))
                        or f"'{voice}' is not installed")
    assert nm.check_settings(["asr_Q:voice=flite:slt"]) == ["asr_Q:voice=flite:slt"] and asked == []
    with pytest.raises(nm.NoiseMatchError, match="cannot run here: 'flite:slt' is not installed"):
        nm.check_settings(["asr_Q:voice=flite:slt"], runs_here=True)
    assert asked == [("flite:slt", "pocketsphinx")]     # the catalogue's default engine


@pytest.mark.parametrize("argv, message", [
    (["--asr-sample", "1", "--asr-setting", "asr_Q:voice=nosuchvoice:engine=whisper-base"],
     "parameter 'voice' must be one of"),
    (["--setting", "keyboard_Q:p=abc"], "setting 'keyboard_Q:p=abc': keyboard_Q: parameter 'p' must be float"),
    (["--asr-setting", "asr_Q:engine=nope"], "parameter 'engine' must be one of"),   # checked even unused
])
def test_cli_refuses_a_bad_setting_before_any_work(argv, message, monkeypatch, capsys):
    from core.collect.noise_match import main

    monkeypatch.setattr(nm, "run_match", lambda *a, **k: pytest.fail("the run started"))
    with pytest.raises(SystemExit) as stop:
        main(["--natural", "asr_human", "--sample", "20", *argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1


def test_cli_refuses_a_tts_voice_not_installed_when_it_would_run(monkeypatch, capsys):
    from core.collect.noise_match import main
    from core.speech import noise

    monkeypatch.setattr(noise, "why_unavailable", lambda voice, engine: f"{engine} is not installed")
    monkeypatch.setattr(nm, "run_match", lambda *a, **k: pytest.fail("the run started"))
    with pytest.raises(SystemExit) as stop:
        main(["--natural", "asr_human", "--asr-sample", "1", "--asr-setting", "asr_Q:engine=whisper-base"])
    assert stop.value.code == 2 and "cannot run here: whisper-base is not installed" in capsys.readouterr().err


def test_an_error_mid_run_starts_on_its_own_line(monkeypatch, capsys):
    from core.collect.noise_match import main

    def run_match(*args, progress, **kwargs):
        progress(3, 10, "keyboard_Q:p=0.1: question 4 of 10")
        raise nm.NoiseMatchError("setting 'x' cannot run here: no voice")

    monkeypatch.setattr(nm, "run_match", run_match)
    assert main(["--natural", "asr_human", "--setting", "keyboard_Q:p=0.1"]) == 2
    lines = capsys.readouterr().err.split("\n")
    assert lines[0].startswith("\r[3/10] keyboard_Q:p=0.1: question 4 of 10")
    assert lines[1] == "python -m core.collect.noise_match: error: setting 'x' cannot run here: no voice"


def test_outputs_follow_the_output_guard_missing_folders_made_and_said(monkeypatch, capsys, tmp_path):
    """As every command's add_output: a missing folder is made (and the file named on stderr);
    a folder that is a file is refused while parsing, before any work."""
    from core.collect.noise_match import main

    result = {"distance": "d", "settings": {"sample": 2, "seed": 0, "asr": [], "conditions": []},
              "profiles": [], "ranking": [{"natural": "natural:asr_human", "setting": "s", "distance": 0.1}],
              "closest": {}}
    monkeypatch.setattr(nm, "run_match", lambda *a, **k: result)
    out = tmp_path / "new" / "dir" / "x.json"
    assert main(["--natural", "asr_human", "--json", str(out), "--csv", str(tmp_path / "r.csv")]) == 0
    assert json.loads(out.read_text())["ranking"][0]["distance"] == 0.1
    assert capsys.readouterr().err.splitlines()[-2:] == [f"wrote {out}", f"wrote {tmp_path / 'r.csv'}"]
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(nm, "run_match", lambda *a, **k: pytest.fail("the run started"))
    assert main(["--natural", "asr_human", "--json", str(tmp_path / "a-file" / "x.json")]) == 2
    assert "a-file is a file, not a folder" in capsys.readouterr().err


def test_format_result_pluralises_leaves_out_a_missing_xquad_distance_and_keeps_three_decimals():
    from core.collect.noise_match import format_result

    row = {"natural": "natural:asr_human", "setting": "keyboard_Q:p=0.1", "n": 1, "distance": 0.21234,
           "w1_wer": 0.1612, "w1_cer": 0.0511, "mix_tv": 0.4, "setting WER %": 22.4, "setting CER %": 3.9,
           "distance (xquad paragraphs)": None}
    kappa = {"model": "m", "a": "natural:asr_human", "b": "keyboard_Q:p=0.1", "n": 1, "kappa": -0.0004,
             "low": None, "high": None, "fisher p": 1.0, "flip % a": 0.0, "flip % b": 0.0,
             "note": "too few flips for an interval: 1 and 1 of 1, 1 shared"}
    result = {"distance": "d", "settings": {"sample": 1, "seed": 0, "asr": [], "conditions": ["asr_human"]},
              "profiles": [], "ranking": [row, {**row, "setting": "keyboard_Q:p=0.3", "distance (xquad paragraphs)":
                                                0.05}],
              "agreement": {"asr_human": [kappa]}}
    lines = format_result(result, top=5).splitlines()
    assert lines[1] == "sample 1 question per condition, seed 0"
    assert lines[4].endswith("(W1 WER 0.161, CER 0.051, mix TV 0.400)") and "None" not in lines[4]
    assert lines[5].endswith("(W1 WER 0.161, CER 0.051, mix TV 0.400; on XQuAD paragraphs 0.050)")
    assert lines[6].endswith("kappa 0.00, Fisher p = 1.000 on 1 question; "
                             "too few flips for an interval: 1 and 1 of 1, 1 shared")
