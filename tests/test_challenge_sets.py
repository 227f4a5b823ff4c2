"""Outside challenge sets (issue 24): pairing that proves itself, loader options, the evaluation
command's selection and outputs, NoiseQA's Table 3, long contexts. Every fixture is built here."""
import csv
import json

import pytest

from core.datasets import DatasetError, load_squad, pair_challenge

P1 = "The Normans were a people who gave their name to Normandy, a region in France. Rollo led them."
P2 = "The Amazon rainforest covers much of the Amazon basin of South America, about 5.5 million square km."
P3 = "Oxygen is a chemical element with symbol O and atomic number 8. It was found by Scheele."


def qa(qid, question, answer, context):
    return {"id": qid, "question": question,
            "answers": [{"text": answer, "answer_start": context.index(answer)}]}


ORIGINAL = [  # (id, question, answer, context)
    ("n1", "Who gave their name to Normandy?", "The Normans", P1),
    ("n2", "Who led the Normans?", "Rollo", P1),
    ("a1", "What does the Amazon rainforest cover?", "much of the Amazon basin", P2),
    ("o1", "What is the atomic number of oxygen?", "8", P3),
    ("o2", "Who found oxygen?", "Scheele", P3),
]


def squad_file(path, rows, version="1.1"):
    """A SQuAD file: one article, one paragraph per run of equal contexts."""
    paragraphs = []
    for qid, question, answer, context in rows:
        if not paragraphs or paragraphs[-1]["context"] != context:
            paragraphs.append({"context": context, "qas": []})
        paragraphs[-1]["qas"].append(qa(qid, question, answer, context))
    path.write_text(json.dumps({"version": version, "data": [{"title": "T", "paragraphs": paragraphs}]}),
                    encoding="utf-8")
    return path


def paraphrased(rows):
    """The paraphrase set of the issue: the same items in order, each id shifted by one."""
    ids = [r[0] for r in rows]
    shifted = ids[1:] + ["extra"]
    return [(new, "Paraphrase: " + q.lower(), a, c) for new, (_, q, a, c) in zip(shifted, rows)]


@pytest.fixture
def original(tmp_path):
    return squad_file(tmp_path / "orig.en.json", ORIGINAL)


# ---------------------------------------------------------------------------------------- pairing


def test_ids_shifted_by_one_pair_by_position(original, tmp_path):
    challenge = squad_file(tmp_path / "para.json", paraphrased(ORIGINAL))
    p = pair_challenge(load_squad(original), load_squad(challenge))
    assert p.rule == "position"
    assert [(o.id, c.id) for o, c in p.pairs] == [("n1", "n2"), ("n2", "a1"), ("a1", "o1"), ("o1", "o2"),
                                                  ("o2", "extra")]
    assert all(o.answers == c.answers for o, c in p.pairs)
    assert p.counts == {"paired": 5, "mismatched": 0, "unpaired": 0}
    assert p.summary() == "paired by position: 5 paired, 0 mismatched, 0 unpaired"


def test_shifted_ids_and_reordered_contexts_are_refused_naming_the_mismatches(original, tmp_path):
    rows = paraphrased(ORIGINAL)
    challenge = squad_file(tmp_path / "para.json", rows[2:] + rows[:2])   # contexts no longer in step
    with pytest.raises(DatasetError) as e:
        pair_challenge(load_squad(original), load_squad(challenge))
    msg = str(e.value)
    # by id: n2 is now the Normans question's paraphrase; id a1 holds the Rollo one (other answer),
    # o1 the Amazon one (other context) ...
    assert "by id: 4 shared ids join different items (first: n2: different gold answers ('Rollo' vs " \
           "'The Normans'); a1: different contexts; o1: different contexts)" in msg
    assert "by position: 5 positions join different items (first: n1 / o1: different contexts;" in msg


def test_a_shift_inside_one_paragraph_is_caught_by_the_gold_answers(tmp_path):
    rows = [r for r in ORIGINAL if r[3] == P1]                     # n1, n2: one paragraph
    orig = load_squad(squad_file(tmp_path / "o.json", rows))
    swapped = [("n2", "who named normandy", "The Normans", P1), ("n1", "who led them", "Rollo", P1)]
    chal = load_squad(squad_file(tmp_path / "c.json", swapped))
    p = pair_challenge(orig, chal)   # the ids lie (same contexts), the answers tell: by position
    assert p.rule == "position" and [(o.id, c.id) for o, c in p.pairs] == [("n1", "n2"), ("n2", "n1")]


def test_forced_rules_drop_and_count_the_pairs_that_disagree(original, tmp_path):
    orig = load_squad(original)
    chal = load_squad(squad_file(tmp_path / "para.json", paraphrased(ORIGINAL)))
    # by id, n2, a1, o1 and o2 are candidates and all four join other items: refused even when forced
    with pytest.raises(DatasetError, match=r"by id: 4 shared ids join different items") as e:
        pair_challenge(orig, chal, "id")
    assert "--pair-by" not in str(e.value)   # forcing is what failed: no hint to force
    # ...unless some agree: keep the original's own first question under its own id
    mixed = paraphrased(ORIGINAL)
    mixed[0] = ("n1", "who named normandy", "The Normans", P1)
    mixed[1] = ("n2", "who led them", "Rollo", P1)
    p = pair_challenge(orig, load_squad(squad_file(tmp_path / "m.json", mixed)), "id")
    assert [(o.id, c.id) for o, c in p.pairs] == [("n1", "n1"), ("n2", "n2")]
    # o1 (another context) and o2 (another answer) are dropped; a1 and "extra" have no partner
    assert p.counts == {"paired": 2, "mismatched": 2, "unpaired": 2}
    assert [m[0] for m in p.mismatched] == ["o1", "o2"]
    assert p.summary() == "paired by id: 2 paired, 2 mismatched, 2 unpaired (1 original, 1 challenge)"
    with pytest.raises(ValueError, match="pair_by must be one of auto, id, position"):
        pair_challenge(orig, chal, "title")


def test_make_challenge_reports_the_rule_counts_and_table3(original, tmp_path, capsys):
    from core.perturb import make_challenge

    challenge = squad_file(tmp_path / "para.json", paraphrased(ORIGINAL))
    assert make_challenge.main(["--input", str(original), "--challenge", str(challenge)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "para: paired by position: 5 paired, 0 mismatched, 0 unpaired"
    assert out[3] == "questions changed: 5 of 5"
    assert out[-1].split()[:2] == ["paired", "questions"]
    # refused: exit status 2 and the reason on one line
    rows = paraphrased(ORIGINAL)
    bad = squad_file(tmp_path / "bad.json", rows[2:] + rows[:2])
    assert make_challenge.main(["--input", str(original), "--challenge", str(bad)]) == 2
    assert "cannot pair 'orig.en' (5 questions) with 'bad' (5 questions): by id:" in capsys.readouterr().err


class FakeEngine:
    """Answers with the first word of the context; fingerprinted by name (core.sweeps)."""

    fingerprint = "fake-first-word"

    def predict(self, questions, contexts, n_best=1, progress=None, skip_invalid=False):
        from core.types import Prediction, Span

        return [Prediction(nbest=[Span(c.split()[0], 0, len(c.split()[0]), 1.0)]) for c in contexts]


def test_sweep_pairs_a_shifted_file_by_position_and_refuses_one_that_does_not_pair(original, tmp_path, monkeypatch):
    from core.sweeps.analysis.sweep_cells import sweep_specs
    from core.sweeps.config import SweepConfig, SweepError
    from core.sweeps.running.run import run_sweep

    squad_file(tmp_path / "para.json", paraphrased(ORIGINAL))
    rows = paraphrased(ORIGINAL)
    squad_file(tmp_path / "bad.json", rows[2:] + rows[:2])
    db = tmp_path / "s.sqlite"
    run = run_sweep(SweepConfig(str(original), ["file:para"], ["fake"]), {"fake": FakeEngine()}, db,
                    data_dir=tmp_path)
    assert run.status == "done" and run.total_units == 10
    source = [s["source"] for s in sweep_specs(db, run.name)]
    assert source == ["challenge file para.json (paired by position: 5 paired, 0 mismatched, 0 unpaired)"]
    # the Heatmaps page says how the file was paired
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("QAX_SWEEP_DB", str(db))
    at = AppTest.from_file("../pages/heatmaps.py", default_timeout=120).run()
    assert not at.exception, at.exception
    assert any("Challenge files: file:para: challenge file para.json (paired by position: 5 paired, 0 mismatched, "
               "0 unpaired)" in c.value.replace("\\", "") for c in at.caption)
    with pytest.raises(SweepError, match=r"file:bad: cannot pair .* by position: 5 positions join different"):
        run_sweep(SweepConfig(str(original), ["file:bad"], ["fake"]), {"fake": FakeEngine()}, db, data_dir=tmp_path)


def test_a_sweep_whose_pairing_is_unchanged_keeps_its_configuration_hash(original, tmp_path):
    """Options at their defaults are not stored: sweeps from before them keep their hashes."""
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.run import run_sweep
    from core.sweeps.store import Store

    nq = squad_file(tmp_path / "noisy.json", [(i, q.lower(), a, c) for i, q, a, c in ORIGINAL])
    db = tmp_path / "s.sqlite"
    run = run_sweep(SweepConfig(str(original), [f"file:{nq}"], ["fake"], name="s"), {"fake": FakeEngine()}, db,
                    data_dir=tmp_path)
    with Store(db, readonly=True) as store:
        cfg = json.loads(store.conn.execute("SELECT config_json FROM sweeps WHERE name = 's'").fetchone()[0])
    assert "pair_by" not in cfg and "on_ambiguous" not in cfg and "lang" not in cfg
    import hashlib

    assert cfg["specs"][0][3] == hashlib.sha256(nq.read_bytes()).hexdigest()   # the file's hash alone
    assert run.status == "done"


# ---------------------------------------------------------------------------------- loader options

# the two occurrences of 北京大学 lie further apart than "nearest" looks (150 characters)
DUREADER_CTX = ("北京大学位于北京。清华大学也位于北京。" + "城里有很多公园和博物馆。" * 15
                + "北京是中国的首都，北京大学建于1898年。")
SECOND = DUREADER_CTX.rindex("北京大学")


def dureader_file(path):
    """answer_start -1 and an answer (北京大学) that occurs twice: DuReader-robust style."""
    doc = {"data": [{"title": "dureader", "paragraphs": [{"context": DUREADER_CTX, "qas": [
        {"id": "d1", "question": "哪所大学建于1898年？", "answers": [{"text": "北京大学", "answer_start": -1}]},
        {"id": "d2", "question": "中国的首都是哪里？", "answers": [{"text": "清华大学", "answer_start": -1}]}]}]}]}
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def test_dureader_file_under_each_on_ambiguous_choice(tmp_path):
    path = dureader_file(tmp_path / "robust.json")
    assert [i for i in range(len(DUREADER_CTX)) if DUREADER_CTX.startswith("北京大学", i)] == [0, SECOND]
    assert SECOND == 208
    with pytest.raises(DatasetError, match=r"question id 'd1'.*occurs 2 times.*on_ambiguous='first'"):
        load_squad(path)
    first = load_squad(path, on_ambiguous="first")
    assert first.by_id["d1"].answers[0].answer_start == 0
    nearest = load_squad(path, on_ambiguous="nearest")
    assert nearest.by_id["d1"].answers[0].answer_start == SECOND   # beside 建于1898年, the question's words
    assert nearest.format == "DuReader-robust" and nearest.lang == "zh"
    assert nearest.load_line() == (
        "robust: DuReader-robust, 2 questions; language zh (guessed from the script of the text); repaired: 1 "
        "answer_start -1 found (one occurrence); guessed: 1 answer_start -1 set to the occurrence nearest the "
        "question's words")
    given = load_squad(path, "zh", on_ambiguous="first")
    assert given.lang_source == "given" and "guessed: 1 answer_start -1 set to the first" in given.load_line()
    with pytest.raises(ValueError, match="lang should be a language code"):
        load_squad(path, "Chinese")


def test_cli_on_ambiguous_and_lang_reach_the_loader(tmp_path, capsys):
    from core.perturb import make_challenge

    path = dureader_file(tmp_path / "robust.json")
    out = tmp_path / "c.json"
    argv = ["--input", str(path), "--perturbation", "drop_punct_Q", "--output", str(out)]
    assert make_challenge.main(argv) == 2
    assert "--on-ambiguous first|nearest" in capsys.readouterr().err
    assert make_challenge.main(argv + ["--on-ambiguous", "nearest", "--lang", "zh"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line.startswith("robust: DuReader-robust, 2 questions; language zh (given)")
    assert load_squad(out).by_id["d1"].answers[0].answer_start == SECOND


def squad2_file(path):
    ctx = "Warsaw is the capital of Poland. It has about 1.8 million inhabitants."
    doc = {"version": "v2.0", "data": [{"title": "W", "paragraphs": [{"context": ctx, "qas": [
        {"id": "s1", "question": "What is the capital of Poland?", "answers": [{"text": "Warsaw", "answer_start": 0}],
         "is_impossible": False},
        {"id": "s2", "question": "What is the capital of Spain?", "answers": [], "is_impossible": True},
        {"id": "s3", "question": "Who founded Warsaw?", "answers": [], "is_impossible": True}]}]}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_squad2_file_is_recognised_and_its_skipped_counts_reported(tmp_path, tiny_registry, monkeypatch, capsys):
    from core.models.evaluate import main

    path = squad2_file(tmp_path / "dev-v2.0.json")
    ds = load_squad(path)
    assert ds.format == "SQuAD 2.0"
    assert ds.load_line() == ("dev-v2.0: SQuAD 2.0, 3 questions; language en (guessed from the script of the "
                              "text); cannot be scored: 2 unanswerable (SQuAD 2.0)")
    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "r.json"
    assert main(["--model", "tiny-a", "--dataset", str(path), "--json", str(out), "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert f"{path}: scored 1 of 3 questions; skipped 2: 2 unanswerable (SQuAD 2.0 is_impossible)" in err
    assert json.loads(out.read_text())[0]["skipped"] == {"unanswerable (SQuAD 2.0 is_impossible)": 2}


# ------------------------------------------------------------------------------------ core.models.evaluate


def test_evaluate_first_sample_predictions_and_csv(original, tmp_path, tiny_registry, monkeypatch, capsys):
    from core.metrics import squad_scores
    from core.models.evaluate import main

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    preds, table, res = tmp_path / "p.json", tmp_path / "q.csv", tmp_path / "r.json"
    assert main(["--model", "tiny-a", "--dataset", str(original), "--first", "3", "--predictions", str(preds),
                 "--csv", str(table), "--json", str(res), "--max-answer-tokens", "5", "--threads", "1"]) == 0
    predictions = json.loads(preds.read_text())
    assert list(predictions) == ["n1", "n2", "a1"]            # the official format: {id: answer}
    assert all(isinstance(v, str) for v in predictions.values())
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [r["id"] for r in rows] == ["n1", "n2", "a1"]
    assert list(rows[0]) == ["model", "dataset", "id", "question", "gold", "prediction", "EM", "F1"]
    assert rows[2]["gold"] == "much of the Amazon basin" and rows[2]["prediction"] == predictions["a1"]
    result = json.loads(res.read_text())[0]
    assert result["n"] == 3 and result["max_answer_tokens"] == 5 and result["selection"] == {"first": 3}
    # the predictions file re-scores to the reported F1 (what the official script would do)
    golds = {q[0]: [q[2]] for q in ORIGINAL}
    rescored = squad_scores(predictions, {k: golds[k] for k in predictions})
    assert round(rescored["f1"], 2) == result["f1"]
    assert round(100 * sum(float(r["F1"]) for r in rows) / 3, 2) == pytest.approx(result["f1"], abs=0.01)
    assert all(len(p.split()) <= 5 for p in predictions.values())
    err = capsys.readouterr().err
    assert "scoring the first 3 of 5 scorable questions" in err
    # a seeded sample: core.sweeps's, reproducible, and inside the bigger sample
    assert main(["--model", "tiny-a", "--dataset", str(original), "--sample", "2", "--seed", "4",
                 "--predictions", str(preds), "--threads", "1"]) == 0
    two = set(json.loads(preds.read_text()))
    assert main(["--model", "tiny-a", "--dataset", str(original), "--sample", "4", "--seed", "4",
                 "--predictions", str(preds), "--threads", "1"]) == 0
    assert len(two) == 2 and two < set(json.loads(preds.read_text()))
    with pytest.raises(SystemExit) as refused:   # argparse's own refusal, while parsing
        main(["--model", "tiny-a", "--dataset", str(original), "--first", "0"])
    assert refused.value.code == 2
    assert "argument --first: must be a whole number of at least 1, got '0'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ Table 3


def test_table3_as_noiseqa_defines_it_on_hand_checked_pairs():
    from core.metrics.text_distance import noise_summary, table3_summary

    originals = ["Who led the Panthers in sacks?", "What year did the war end?"]
    noisy = ["who led the panthers and sacks", "What year did teh war end?"]
    t3 = table3_summary(originals, noisy)
    # lower-cased, no punctuation: "who led the panthers in sacks" (29 chars, 6 words) vs "... and
    # sacks": in -> and, 1 substitution + 1 insertion; "what year did the war end" (25 chars, 6
    # words): the -> teh, 2 substitutions. CER 4 / 54 characters, WER 2 / 12 words.
    assert t3["cer"] == pytest.approx(100 * 4 / 54)
    assert t3["wer"] == pytest.approx(100 * 2 / 12)
    # BLEU as the paper computes it: sacreBLEU, uncased, on the text as written
    from sacrebleu.metrics import BLEU

    assert t3["bleu"] == pytest.approx(BLEU(lowercase=True).corpus_score(noisy, [originals]).score)
    raw = noise_summary(originals, noisy)
    # raw: the capitals of "Who" and "Panthers" (2) and the first "?" (1) count too: 4 + 3 edits over
    # 30 + 26 characters
    assert raw["cer"] == pytest.approx(100 * 7 / 56)
    assert raw["wer"] == pytest.approx(100 * 5 / 12)   # Who, Panthers, in, sacks? + teh
    assert table3_summary(originals, originals) == {"cer": 0.0, "wer": 0.0, "bleu": pytest.approx(100.0)}


@pytest.mark.needs_data("xquad/xquad.en.json", "noiseqa/Synthetic/xquad-keyboard-synthetic.json")
def test_table3_reproduces_the_papers_keyboard_row():
    from core import config
    from core.metrics.text_distance import table3_summary

    root = config.data_dir()
    en = load_squad(root / "xquad" / "xquad.en.json")
    kb = load_squad(root / "noiseqa" / "Synthetic" / "xquad-keyboard-synthetic.json")
    p = pair_challenge(en, kb)
    assert p.summary() == "paired by id: 1,190 paired, 0 mismatched, 0 unpaired"
    t3 = table3_summary([o.question for o, _ in p.pairs], [c.question for _, c in p.pairs])
    assert (round(t3["cer"], 1), round(t3["wer"], 1), round(t3["bleu"], 1)) == (4.1, 23.9, 52.7)   # SEEDS.md


# ------------------------------------------------------------------------------------ long contexts

ANSWER_25 = ("every citizen of Arlenburgshausen, whether born within its palisades or arriving from distant "
             "principalities, shall share equally in the harvest and peace of the valley")


def long_context(min_chars=20_000):
    """~20k characters of filler paragraphs, a decoy ("council") early and the 25-word answer in
    the middle; neither "every" nor "valley" nor "council" occurs anywhere else."""
    topics = ["river", "mountain", "library", "harbour", "railway", "market", "cathedral", "bridge"]
    filler, i = [], 0
    while sum(len(p) for p in filler) < min_chars:
        t = topics[i % len(topics)]
        filler.append(f"The {t} number {i} was built in {1700 + i} and repaired in {1800 + 2 * i}. Visitors to "
                      f"the {t} in the district of Norden counted {100 + 7 * i} people on a busy day.")
        i += 1
    mid = len(filler) // 2
    special = f"In 1923 the town adopted a motto. The motto declares that {ANSWER_25}."
    return " ".join(filler[:3] + ["The council met in 1923."] + filler[3:mid] + [special] + filler[mid:])


class MarkerQA:
    """A stand-in QA model whose logits are set by token: start 8 on "every", end 8 on "valley",
    start and end 5 on "council", 0 elsewhere. The engine's windowing, answer cap and offset
    mapping are what is tested, on a real tokenizer."""

    def __init__(self, tokenizer):
        import torch

        self.config = type("Config", (), {"max_position_embeddings": 512, "model_type": "bert"})()
        ids = {w: tokenizer.convert_tokens_to_ids(w) for w in ("every", "valley", "council")}
        self.start = {ids["every"]: 8.0, ids["council"]: 5.0}
        self.end = {ids["valley"]: 8.0, ids["council"]: 5.0}
        self.torch = torch

    def to(self, device):
        return self

    def eval(self):
        return self

    def __call__(self, input_ids, **_):
        start = self.torch.zeros(input_ids.shape)
        end = self.torch.zeros(input_ids.shape)
        for tid, v in self.start.items():
            start[input_ids == tid] = v
        for tid, v in self.end.items():
            end[input_ids == tid] = v
        return type("Out", (), {"start_logits": start, "end_logits": end})()


def test_a_25_word_answer_in_a_20k_context_is_found_when_the_cap_allows_it():
    from pathlib import Path

    from transformers import AutoTokenizer

    from core.qa.engine import EngineSettings, QAEngine

    tok = AutoTokenizer.from_pretrained(Path(__file__).resolve().parents[1] / "assets" / "models" / "minilm-squad")
    ctx = long_context()
    assert len(ctx) > 20_000 and len(ANSWER_25.split()) == 25
    n_tokens = len(tok(ANSWER_25, add_special_tokens=False)["input_ids"])
    assert n_tokens == 35
    for word in ("every", "valley", "council"):
        assert len(tok(ctx, add_special_tokens=False)["input_ids"]) > 4000 and ctx.count(word) == 1
    engine = QAEngine(MarkerQA(tok), tok, EngineSettings(threads=1, max_answer_tokens=30), device="cpu")
    assert engine.is_long(ctx) and engine.long_context_tag(ctx) == "long=512:128"
    seen = []
    capped = engine.predict(["What does the motto declare?"], [ctx], n_best=1,
                            progress=lambda done, total: seen.append(total))[0]
    assert capped.text == "council"            # the 33-token answer does not fit under a cap of 30
    assert seen[-1] == 12                      # 512-token windows sharing 128 ...
    engine.settings.long_max_length, engine.settings.long_stride = 384, 128
    engine.predict(["What does the motto declare?"], [ctx], n_best=1, progress=lambda done, total: seen.append(total))
    assert seen[-1] == 18                      # ... where the ordinary shape needs 18 of 384 sharing 128
    engine.settings.long_max_length, engine.settings.long_stride = 512, 128
    engine.settings.max_answer_tokens = 60
    found = engine.predict(["What does the motto declare?"], [ctx], n_best=1)[0].best
    assert (found.text, found.start) == (ANSWER_25, ctx.index(ANSWER_25))
    # a short context keeps the ordinary shape: nothing SQuAD-sized changes
    engine.settings.max_answer_tokens = 30
    assert not engine.is_long(ctx[:7999]) and engine.long_context_tag(ctx[:7999]) == ""


# --------------------------------------------------------------------------------------------- app


def test_sweeps_page_shows_how_each_challenge_file_pairs_and_refuses_one_that_does_not(
        tmp_path, monkeypatch, tiny_registry):
    from streamlit.testing.v1 import AppTest

    data = tmp_path / "data"
    (data / "xquad").mkdir(parents=True)
    (data / "noiseqa" / "Synthetic").mkdir(parents=True)
    squad_file(data / "xquad" / "xquad.en.json", ORIGINAL)
    squad_file(data / "noiseqa" / "Synthetic" / "xquad-keyboard-synthetic.json", paraphrased(ORIGINAL))
    rows = paraphrased(ORIGINAL)
    squad_file(data / "noiseqa" / "Synthetic" / "xquad-asr-synthetic.json", rows[2:] + rows[:2])
    for key, value in (("QAX_DATA_DIR", data), ("QAX_MODELS_TOML", tiny_registry), ("HF_HUB_OFFLINE", "1"),
                       ("QAX_SWEEP_DB", tmp_path / "s.sqlite")):
        monkeypatch.setenv(key, str(value))
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=120).run()
    at.selectbox(key="sw_dataset").set_value("xquad/xquad.en").run()
    assert not at.exception, at.exception
    shown = lambda items: [x.value.replace("\\", "") for x in items]   # noqa: E731
    assert any("Loaded: xquad/xquad.en: SQuAD v1.1, 5 questions; language en" in c for c in shown(at.caption))
    at.multiselect(key="sw_files").set_value(["file:noiseqa/Synthetic/xquad-keyboard-synthetic"]).run()
    assert any("paired by position: 5 paired, 0 mismatched, 0 unpaired" in c for c in shown(at.caption))
    assert not at.button(key="sw_start").disabled
    at.multiselect(key="sw_files").set_value(["file:noiseqa/Synthetic/xquad-keyboard-synthetic",
                                              "file:noiseqa/Synthetic/xquad-asr-synthetic"]).run()
    [error] = [e for e in shown(at.error) if "cannot be used" in e]
    assert "by position: 5 positions join different items (first: n1 / o1: different contexts" in error
    assert at.button(key="sw_start").disabled
