"""core.collect.flip_agreement: Cohen's kappa of flip vectors, its seeded interval, the flip definition,
and the command line's refusals (no speech engine, no model loaded: the slow half is
tests/test_agreement_models.py)."""
from __future__ import annotations

import json
import math

import pytest

from core.collect import flip_agreement as agreement
from core.collect import trials
from core.collect.agreement import main
from core.datasets import Dataset
from core.types import Answer, QAExample, Span


def table(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return a, b


def test_kappa_on_a_hand_built_table():
    # both 20, only a 5, only b 10, neither 65: p_o = 85/100, p_a = .25, p_b = .30,
    # p_e = .25 * .30 + .75 * .70 = .60, kappa = (.85 - .60) / (1 - .60) = .625
    a, b = table(20, 5, 10, 65)
    assert agreement.kappa_counts(a, b) == (20, 5, 10, 65)
    assert agreement.kappa(a, b) == pytest.approx(0.625)
    # 2x2 of 10: both 3, only a 1, only b 1, neither 5: p_o = .8, p_e = .4*.4 + .6*.6 = .52,
    # kappa = .28 / .48 = 7/12
    assert agreement.kappa(*table(3, 1, 1, 5)) == pytest.approx(7 / 12)
    assert agreement.kappa(*table(4, 0, 0, 6)) == pytest.approx(1.0)        # perfect agreement
    assert agreement.kappa(*table(0, 5, 5, 0)) == pytest.approx(-1.0)       # always opposite


def test_kappa_agrees_with_scikit_learn_where_installed():
    metrics = pytest.importorskip("sklearn.metrics")
    for counts in [(20, 5, 10, 65), (3, 1, 1, 5), (1, 7, 2, 30), (0, 3, 4, 9)]:
        a, b = table(*counts)
        assert agreement.kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b))


def test_a_constant_vector_has_no_kappa_and_says_why():
    a, b = [False] * 6, [True, False, True, False, False, False]
    assert agreement.kappa(a, b) is None
    assert agreement.kappa(b, [True] * 6) is None
    assert agreement.kappa([], []) is None
    row = agreement._kappa_row("m", "x", "y", a, b, seed=0, n_boot=200)
    assert row["kappa"] is None and row["low"] is None and row["high"] is None
    assert row["note"].startswith("x flips no question")
    assert row["agreement %"] == pytest.approx(66.7)
    assert json.loads(json.dumps(row)) == row                                  # no NaN in the JSON
    assert agreement.kappa_label(row).startswith("undefined: x flips no question")


def test_the_interval_is_reproducible_with_its_seed():
    a, b = table(6, 2, 3, 19)
    first = agreement.kappa_interval(a, b, seed=7, n_boot=500)
    assert first == agreement.kappa_interval(a, b, seed=7, n_boot=500)
    assert first != agreement.kappa_interval(a, b, seed=8, n_boot=500)
    low, high, left_out = first
    assert low < agreement.kappa(a, b) < high and -1 <= low and high <= 1
    assert 0 <= left_out < 500
    # a point mass: every resample of a perfect table is perfect
    assert agreement.kappa_interval(*table(5, 0, 0, 5), seed=0, n_boot=200)[:2] == pytest.approx((1.0, 1.0))


CTX = "Paris is the capital of France. Berlin is the capital of Germany."


class KeywordEngine:
    """Answers by keyword, so the flips are known by hand: 'germany' -> Berlin, 'capital' ->
    'the Paris.' (normalises to 'paris'), anything else -> 'France'; an empty question -> no answer."""

    def predict(self, questions, contexts, n_best=5, skip_invalid=False, progress=None):
        out = []
        for i, q in enumerate(questions):
            if progress and i:
                progress(i, len(questions))
            if not q.strip():
                out.append(agreement_prediction(None))
            elif "germany" in q.lower():
                out.append(agreement_prediction(Span("Berlin", 32, 38, 0.9)))
            elif "capital" in q.lower():
                out.append(agreement_prediction(Span("the Paris.", 0, 5, 0.9)))
            else:
                out.append(agreement_prediction(Span("France", 24, 30, 0.5)))
        return out


def agreement_prediction(span):
    from core.types import Prediction

    return Prediction([span] if span else [])


def examples() -> list[QAExample]:
    return [QAExample(f"q{i}", q, CTX, (Answer("Paris", 0),), lang="en")
            for i, q in enumerate(["What is the capital?", "What is the capital?", "Which capital city?",
                                   "What is the capital?"])]


def test_flip_is_a_changed_answer_after_squad_normalisation():
    conditions = {"natural:x": ["what is the capital", "what is germany", "", "what is the capitol"],
                  "keyboard:p=0.25": ["Whar is the capital?", "What is the capital?", "Which germany city?",
                                      "Wgat is rhe capitol?"]}
    result = agreement.compare(examples(), conditions, {"kw": KeywordEngine()}, seed=0, n_boot=100)
    rows = result.rows
    assert [r["clean answer"] for r in rows] == ["the Paris."] * 4
    # "the Paris." against "the Paris.": no flip; Berlin: flip; the empty transcript: no answer, a flip;
    # "capitol" matches no keyword: France, a flip
    assert [r["natural:x flip"] for r in rows] == [False, True, True, True]
    assert [r["natural:x answer"] for r in rows] == ["the Paris.", "Berlin", "", "France"]
    assert [r["keyboard:p=0.25 flip"] for r in rows] == [False, False, True, True]
    (k,) = result.kappas
    # natural (F T T T) against keyboard (F F T T): both 2, only natural 1, neither 1:
    # p_o = .75, p_e = .75*.5 + .25*.5 = .5, kappa = .5
    assert (k["both flip"], k["only a"], k["only b"], k["neither"]) == (2, 1, 0, 1)
    assert k["kappa"] == pytest.approx(0.5) and k["agreement %"] == 75.0
    assert agreement.flip_rates(result) == [
        {"model": "kw", "condition": "natural:x", "questions": 4, "flips": 3, "flip %": 75.0},
        {"model": "kw", "condition": "keyboard:p=0.25", "questions": 4, "flips": 2, "flip %": 50.0}]
    matrix = agreement.kappa_matrix(result, "kw")
    assert matrix["natural:x"]["natural:x"] == "1"
    assert matrix["natural:x"]["keyboard:p=0.25"] == matrix["keyboard:p=0.25"]["natural:x"]
    assert matrix["natural:x"]["keyboard:p=0.25"].startswith("0.50")
    # a condition that changes no answer: its kappas are undefined, and the matrix's notes say why once
    same = agreement.compare(examples(), {**conditions, "typed": [ex.question for ex in examples()]},
                             {"kw": KeywordEngine()}, seed=0, n_boot=100)
    matrix = agreement.kappa_matrix(same, "kw")
    assert matrix["typed"]["natural:x"] == matrix["keyboard:p=0.25"]["typed"] == "undefined"
    assert agreement.matrix_notes(same, "kw") == [
        "natural:x ~ keyboard:p=0.25: too few flips for an interval: 3 and 2 of 4, 2 shared", "typed flips no question"]


def test_keyboard_condition_is_the_catalogues_draw_under_the_seed():
    from core.perturb.registry import get
    from core.perturb.spec import PerturbationSpec, rng_for

    exs = [QAExample("k1", "Who wrote the famous novel about whales?", CTX, (Answer("Paris", 0),), lang="en")]
    got = agreement.keyboard_condition(exs, 0.25, seed=3)
    spec = PerturbationSpec.make("keyboard_Q", {"p": 0.25})
    expected = get("keyboard_Q").apply(exs[0], rng_for(3, exs[0], spec, 0), p=0.25)[0].text
    assert got == [expected] and got == agreement.keyboard_condition(exs, 0.25, seed=3)
    assert agreement.keyboard_condition(exs, 1.0, seed=0)[0] != exs[0].question   # p=1: every word changes


def test_compare_reports_the_engines_progress_and_stops_at_the_next_report_when_told():
    """Progress counts questions over every model and condition, as the engine reports them; a
    callback that raises (a page's Cancel ending its run) stops the comparison at that report."""
    class Counting(KeywordEngine):
        asked: list[int] = []

        def predict(self, questions, *args, **kwargs):
            self.asked.append(len(questions))
            return super().predict(questions, *args, **kwargs)

    conditions = {"natural:x": ["what is the capital", "what is germany", "", "what is the capitol"]}
    seen = []
    agreement.compare(examples(), conditions, {"kw": Counting()}, progress=lambda d, t, w: seen.append((d, t, w)))
    assert Counting.asked == [4, 4]   # one call per condition: the engine batches as it always did
    assert [(d, t) for d, t, _ in seen] == [(0, 8), (1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (6, 8), (7, 8),
                                            (8, 8)]
    assert seen[1][2] == "kw: the typed questions (1/4)" and seen[5][2] == "kw: natural:x (1/4)"

    class Cancelled(Exception):
        pass

    def cancel_at_the_second_report(done, total, what):
        if done > 1:
            raise Cancelled

    Counting.asked = []
    with pytest.raises(Cancelled):
        agreement.compare(examples(), conditions, {"kw": Counting()}, progress=cancel_at_the_second_report)
    assert Counting.asked == [4]   # the natural condition was never asked


def test_compare_refuses_mismatched_conditions():
    with pytest.raises(agreement.AgreementError, match="no question"):
        agreement.compare([], {}, {"kw": KeywordEngine()})
    with pytest.raises(agreement.AgreementError, match="has 1 questions for 4"):
        agreement.compare(examples(), {"x": ["q"]}, {"kw": KeywordEngine()})


# ------------------------------------------------------------------------------ command line


@pytest.fixture
def empty_trial(tmp_path) -> trials.Trial:
    ds = Dataset("toy.en", "en", examples())
    return trials.create_trial(trials.Speaker("Ana"), ds, 2, seed=0, root=tmp_path, trial_id="ana")


def run(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


def test_cli_bad_input_is_one_line_and_status_2(capsys, tmp_path, empty_trial):
    code, err = run(capsys, "--trial", "no-such-trial", "--model", "minilm-squad-v2")
    assert code == 2 and "\n" not in err and "no trial 'no-such-trial'" in err
    code, err = run(capsys, "--trial", str(empty_trial.path), "--model", "minilm-squad-v2",
                    "--json", str(empty_trial.path / "trial.json"))
    assert code == 2 and "refusing to overwrite an input" in err and "\n" not in err
    assert json.loads((empty_trial.path / "trial.json").read_text())["id"] == "ana"     # untouched
    code, err = run(capsys, "--trial", str(empty_trial.path), "--model", "minilm-squad-v2", "--asr", "pocketsphinx")
    assert code == 2 and "no recorded question transcribed by pocketsphinx" in err
    code, err = run(capsys, "--trial", str(empty_trial.path), "--model", "minilm-squad-v2")
    assert code == 2 and "no ASR engine's transcripts to compare" in err and "\n" not in err
    code, err = run(capsys, "--trial", str(empty_trial.path), "--model", "minilm-squad-v2", "--asr", "nope")
    assert code == 2 and "unknown ASR engine 'nope'" in err
    code, err = run(capsys, "--trial", str(empty_trial.path), "--model", "no-such-model")
    assert code == 2 and "no-such-model" in err and "\n" not in err
    with pytest.raises(SystemExit) as exc:
        main(["--trial", str(empty_trial.path), "--model", "m", "--keyboard-p", "2"])
    assert exc.value.code == 2 and "--keyboard-p must be in 0..1" in capsys.readouterr().err
    # a voice or TTS -> ASR engine that is no catalogue's is refused before the natural set is read
    for flags, said in ((["--voice", "nosuchvoice"], "parameter 'voice' must be one of"),
                        (["--tts-asr", "nosuch"], "parameter 'engine' must be one of")):
        with pytest.raises(SystemExit) as exc:
            main(["--natural", "heysquad", "--model", "m", *flags])
        assert exc.value.code == 2 and said in capsys.readouterr().err


def test_kappa_halfwidth_shrinks_with_the_trial():
    widths = [agreement.kappa_halfwidth(n, 0.2) for n in (25, 50, 100, 200)]
    assert widths == sorted(widths, reverse=True)
    assert widths[0] == pytest.approx(2 * widths[2]) and math.isclose(widths[2], 0.2245, abs_tol=1e-4)


def test_too_few_flips_withhold_the_interval_and_fisher_says_there_is_no_sign():
    """The audit's case: 4 and 3 flips of 30, none shared. The bootstrap can never draw a shared
    flip, so its interval sat wholly below 0; Fisher's exact test gives p = 1."""
    a, b = table(0, 4, 3, 23)
    row = agreement._kappa_row("m", "natural:asr_human", "disfluency:n=1", a, b, seed=0, n_boot=1000)
    # p_o = 23/30, p_e = (4/30)(3/30) + (26/30)(27/30) = 0.7933, kappa = (0.7667 - 0.7933) / 0.2067 = -0.129
    assert row["kappa"] == pytest.approx(-0.1290, abs=1e-4) and row["fisher p"] == 1.0
    assert row["low"] is None and row["high"] is None
    assert row["note"] == "too few flips for an interval: 4 and 3 of 30, none shared"
    assert agreement.kappa_label(row) == "-0.13, Fisher p = 1.000"
    # a 4-question trial where both flip the same two: no "[1.00, 1.00]"; Fisher p = 2 / C(4, 2) = 1/3
    row = agreement._kappa_row("m", "x", "y", *table(2, 0, 0, 2), seed=0, n_boot=200)
    assert agreement.kappa_label(row, short=True) == "1.00 (p 0.333)" and row["fisher p"] == pytest.approx(1 / 3, 1e-3)
    assert row["note"] == "too few flips for an interval: 2 and 2 of 4, 2 shared"
    # flips enough, but none shared: still no interval (every resample would have none shared too)
    row = agreement._kappa_row("m", "x", "y", *table(0, 8, 7, 45), seed=0, n_boot=200)
    assert row["low"] is None and row["note"] == ("no interval: no question flips under both x and y, "
                                                  "so none does in any resample")
    # enough of every cell: the interval is there, with Fisher's p beside it
    row = agreement._kappa_row("m", "x", "y", *table(6, 5, 5, 24), seed=0, n_boot=200)
    assert row["low"] < row["kappa"] < row["high"] and row["fisher p"] == pytest.approx(0.0424, abs=1e-4)
    assert agreement.kappa_label(row).endswith(", Fisher p = 0.042")


def test_a_kappa_near_zero_is_never_minus_zero():
    assert agreement.kappa_label({"kappa": -0.0012, "low": -0.004, "high": 0.3, "fisher p": 0.9}) == \
        "0.00 [0.00, 0.30], Fisher p = 0.900"


def test_matrix_notes_name_the_pair_an_interval_note_belongs_to():
    rows = [{"model": "m", "a": "x", "b": "y", "kappa": 0.4, "note": "57 of 1000 resamples left out (a condition "
                                                                  "constant in them)"},
            {"model": "m", "a": "x", "b": "z", "kappa": None, "note": "z flips no question"},
            {"model": "m", "a": "y", "b": "z", "kappa": None, "note": "z flips no question"}]
    result = agreement.Agreement(["x", "y", "z"], ["m"], [], rows)
    assert agreement.matrix_notes(result, "m") == [
        "x ~ y: 57 of 1000 resamples left out (a condition constant in them)", "z flips no question"]


def test_natural_json_holds_the_flip_rates_by_paragraph_it_prints(monkeypatch, tmp_path, capsys):
    from core.collect import agreement as cli_module
    from core.qa import registry

    exs = examples()
    conditions = {"natural:asr_human": ["What is the capital?", "Germany?", "", "What is the capitol?"],
                  "keyboard:p=0.25": ["What is the capital?"] * 4}
    settings = {"natural set": "heysquad", "sample": 4, "xquad_ids": ["q1", "q2"]}
    monkeypatch.setattr(cli_module, "natural_set_conditions", lambda *a, **k: (exs, conditions, settings))
    monkeypatch.setattr(registry, "get_entry", lambda name: None)
    monkeypatch.setattr(registry, "load_engine", lambda name: KeywordEngine())
    out = tmp_path / "agree.json"
    assert main(["--natural", "heysquad", "--model", "kw", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    by_paragraph = json.loads(out.read_text())["flip_rates_by_paragraph"]
    xquad = {r["condition"]: (r["flips"], r["questions"]) for r in by_paragraph
             if r["questions on"] == "xquad paragraphs"}
    # q1 (Berlin) and q2 (the empty transcript) are on XQuAD's paragraphs: both flip naturally, none by keyboard
    assert xquad == {"natural:asr_human": (2, 2), "keyboard:p=0.25": (0, 2)}
    assert "xquad paragraphs   natural:asr_human" in printed and "2/2    100.0%" in printed
    assert len(by_paragraph) == 4 and all(r["model"] == "kw" for r in by_paragraph)
