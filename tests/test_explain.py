"""core.explain: integrated-gradient attributions on real shipped models, word alignment, the CLI."""
import json

import pytest

from core.explain import align_words, answer_move, explain, word_scores
from core.explain.align import origin_ranges
from core.explain.words import WordScore
from core.perturb.base import Edit

CONTEXT = "Maria has a cat and a truck."
QUESTION = "What animal does Maria have?"
CAT = (12, 15)


@pytest.fixture(scope="module")
def engines():
    from core.qa.registry import load_engine

    return {name: load_engine(name) for name in ("minilm-squad", "e5-qa-multi", "minilm-squad-v2")}


def _padded_change(engine, question, context, part, which, pos):
    """The target logit with every token of ``part`` padded, computed here without captum."""
    import torch

    tok = engine.tokenizer
    enc = tok(question, context, return_tensors="pt")
    seq = enc.sequence_ids(0)
    seg = 0 if part == "question" else 1
    base = enc["input_ids"].clone()
    for j, s in enumerate(seq):
        if s == seg:
            base[0, j] = tok.pad_token_id
    with torch.no_grad():
        full = engine.model(**enc)
        padded = engine.model(**{**enc, "input_ids": base})
    key = "start_logits" if which == "start" else "end_logits"
    return float(getattr(full, key)[0, pos] - getattr(padded, key)[0, pos])


@pytest.mark.parametrize("name", ["minilm-squad", "e5-qa-multi"])
def test_completeness_sum_equals_change_from_baseline(engines, name):
    engine = engines[name]
    # e5-qa-multi's integration path is rougher: 64 steps miss its context's end change by 13 %
    a = explain(engine, QUESTION, CONTEXT, span=CAT, n_steps=64 if name == "minilm-squad" else 128)
    tok = engine.tokenizer
    enc = tok(QUESTION, CONTEXT, return_offsets_mapping=True)
    seq = enc.sequence_ids(0)
    start_pos = next(j for j, (s, o) in enumerate(zip(seq, enc["offset_mapping"])) if s == 1 and o[0] == 12)
    end_pos = next(j for j, (s, o) in enumerate(zip(seq, enc["offset_mapping"])) if s == 1 and o[1] == 15)
    for part in ("question", "context"):
        for which, pos in (("start", start_pos), ("end", end_pos)):
            change = _padded_change(engine, QUESTION, CONTEXT, part, which, pos)
            total = sum(getattr(t, f"score_{which}") for t in a.part(part))
            assert abs(change) > 0.5            # the part matters: the check below is not 0 == 0
            assert total == pytest.approx(change, abs=0.05 * abs(change) + 0.02), (part, which)
            assert a.deltas[part][which]["change"] == pytest.approx(change, abs=0.02)


@pytest.mark.parametrize("name", ["minilm-squad", "minilm-squad-v2"])
def test_answer_token_has_the_highest_context_attribution(engines, name):
    a = explain(engines[name], QUESTION, CONTEXT, span=CAT, n_steps=32)
    words = word_scores(CONTEXT, a.part("context"))
    top = max(words, key=lambda w: w.score_start)
    assert top.text == "cat"
    assert top.score_start > 2 * sorted(w.score_start for w in words)[-2]


def test_hand_checked_animal_is_the_top_content_word_for_the_start_of_cat(engines):
    # the case, on minilm-squad-v2. Measured on 2026-11-26 (question padded, context kept,
    # 50 steps): animal 1.88 > Maria 1.23 > have 0.65 for the start of "cat". minilm-squad and
    # e5-qa-multi rank the shared entity "Maria" above "animal" for this start (1.00 vs 0.77,
    # 1.23 vs 0.70), so the case is pinned on the model that reads the question's type word.
    a = explain(engines["minilm-squad-v2"], QUESTION, CONTEXT, span=CAT)
    words = {w.text.strip("?"): w for w in word_scores(QUESTION, a.part("question"))}
    content = ["animal", "Maria", "have"]
    assert max(content, key=lambda w: words[w].score_start) == "animal"
    assert words["animal"].score_start == pytest.approx(1.88, abs=0.1)


def test_default_span_is_the_torch_answer_and_offsets_index_the_texts(engines):
    engine = engines["minilm-squad-v2"]
    question = "  What animal does Maria have?"   # leading spaces: offsets into the text as given
    a = explain(engine, question, CONTEXT, n_steps=8)
    assert (a.answer.text, a.answer.start, a.answer.end) == ("cat", 12, 15)
    assert a.answer.text == engine.answer(question, CONTEXT).best.text
    assert [question[t.start:t.end] for t in a.part("question")] == ["What", "animal", "does", "Maria", "have", "?"]
    assert [CONTEXT[t.start:t.end] for t in a.part("context")][:4] == ["Maria", "has", "a", "cat"]
    d = a.as_dict()
    assert d["tokens"][1] == {**d["tokens"][1], "text": "animal", "segment": "question", "start": 7, "end": 13}


def test_batched_integration_equals_captums_layer_integrated_gradients(engines):
    """The batched integration gives captum's numbers: the context's attributions to the start of
    "cat", computed here with captum's LayerIntegratedGradients at the same 8 steps."""
    import torch
    from captum.attr import LayerIntegratedGradients

    engine = engines["minilm-squad-v2"]
    a = explain(engine, QUESTION, CONTEXT, span=CAT, n_steps=8)
    model, tok = engine.model, engine.tokenizer
    enc = tok(QUESTION, CONTEXT, return_tensors="pt", return_offsets_mapping=True)
    seq = enc.sequence_ids(0)
    start_pos = next(j for j, (s, o) in enumerate(zip(seq, enc["offset_mapping"][0].tolist())) if s == 1 and o[0] == 12)
    baseline = enc["input_ids"].clone()
    baseline[0, [j for j, s in enumerate(seq) if s == 1]] = tok.pad_token_id
    extra = {k: enc[k] for k in ("attention_mask", "token_type_ids")}

    def start_logit(ids):
        out = model(input_ids=ids, **{k: v.expand(ids.shape[0], -1) for k, v in extra.items()})
        return out.start_logits[:, start_pos]

    lig = LayerIntegratedGradients(start_logit, model.get_input_embeddings())
    with torch.enable_grad():
        ref = lig.attribute(enc["input_ids"], baselines=baseline, n_steps=8).sum(-1)[0]
    ctx = [j for j, s in enumerate(seq) if s == 1]
    got = [t.score_start for t in a.part("context")]
    assert got == pytest.approx([float(ref[j]) for j in ctx], abs=1e-4)
    assert max(abs(x) for x in got) > 1.0             # not a comparison of zeros


def test_with_a_tolerance_the_steps_double_until_the_error_is_within_it(engines):
    engine = engines["minilm-squad-v2"]
    coarse = explain(engine, QUESTION, CONTEXT, span=CAT, n_steps=8)
    assert coarse.integration_error() > 0.05           # 8 steps miss this context's change by more
    a = explain(engine, QUESTION, CONTEXT, span=CAT, n_steps=64, tolerance=0.05)
    assert a.n_steps in (16, 32, 64) and a.integration_error() <= 0.05
    capped = explain(engine, QUESTION, CONTEXT, span=CAT, n_steps=12, tolerance=0.001)
    assert capped.n_steps == 12                         # the budget is the last try


def test_progress_is_reported_and_an_exception_from_it_stops_the_work(engines):
    from core.explain import Cancelled
    from core.explain.integrated import LOADING

    engine = engines["minilm-squad-v2"]
    calls = []

    def progress(phase, done, total):
        calls.append((phase, done, total))

    engine.release_torch()   # it answers from its ONNX graph: the weights load first, and say so
    explain(engine, QUESTION, CONTEXT, n_steps=8, progress=progress)
    assert calls[:3] == [(LOADING, 0, 1), (LOADING, 1, 1), ("reading", 1, 1)]
    assert calls[-1] == ("integrating at 8 steps", 16, 16)   # 8 steps for each of the two parts
    calls.clear()
    explain(engine, QUESTION, CONTEXT, n_steps=8, progress=progress)
    assert calls[0] == ("reading", 1, 1)                     # held now: nothing to load

    def stop_at_once(phase, done, total):   # a cancel asked as the weights load stops the run there
        calls.append(phase)
        raise Cancelled(phase)

    engine.release_torch()
    calls.clear()
    with pytest.raises(Cancelled):
        explain(engine, QUESTION, CONTEXT, n_steps=8, progress=stop_at_once)
    assert calls == [LOADING]

    def stop(phase, done, total):
        calls.append(phase)
        if phase.startswith("integrating"):
            raise Cancelled(phase)

    calls.clear()
    with pytest.raises(Cancelled):
        explain(engine, QUESTION, CONTEXT, n_steps=64, progress=stop)
    assert calls == [LOADING, LOADING, "reading", "integrating at 64 steps"]   # let go of above: loaded again


def test_bad_input_is_refused(engines):
    from core.qa.engine import QAInputError

    with pytest.raises(QAInputError):
        explain(engines["minilm-squad"], "  ", CONTEXT)
    with pytest.raises(ValueError, match="not inside the context"):
        explain(engines["minilm-squad"], QUESTION, CONTEXT, span=(20, 99))


# ------------------------------------------------------------------------------- words, alignment


def test_word_scores_sum_subword_tokens():
    from core.explain.integrated import TokenScore

    toks = [TokenScore("wh", "question", 0, 2, 1.0, 0.5), TokenScore("##at", "question", 2, 4, 0.25, 0.0),
            TokenScore("?", "question", 5, 6, -1.0, 0.0)]
    assert [(w.text, w.score, w.score_start) for w in word_scores("what ?", toks)] == [("what", 1.75, 1.25),
                                                                                       ("?", -1.0, -1.0)]


def _ws(text, scores):
    from core.explain.words import word_spans

    return [WordScore(text[a:b], a, b, s) for (a, b), s in zip(word_spans(text), scores)]


def test_origin_ranges_map_each_new_character_back():
    assert origin_ranges("ab cd", [Edit(2, 3, "", "del")]) == [(0, 1), (1, 2), (3, 4), (4, 5)]
    assert origin_ranges("ab", [Edit(1, 1, "X", "ins")]) == [(0, 1), (1, 1), (1, 2)]


def test_align_substitution_deletion_insertion_split():
    # substitution (keyboard) and a deleted word
    old, new = "What animal does Maria have?", "Whqt animal Maria have?"
    rows = align_words(old, _ws(old, [1, 2, 3, 4, 5]), new, _ws(new, [10, 20, 40, 50]),
                       [Edit(2, 3, "q", "keyboard"), Edit(12, 17, "", "drop_word")])
    assert [(r.clean, r.clean_score, r.perturbed, r.perturbed_score) for r in rows] == [
        ("What", 1, "Whqt", 10), ("animal", 2, "animal", 20), ("does", 3, "", None),
        ("Maria", 4, "Maria", 40), ("have?", 5, "have?", 50)]
    # an inserted word, then a split word (one clean against two perturbed)
    old, new = "Who wrote it?", "Who really wrote i t?"
    rows = align_words(old, _ws(old, [1, 2, 3]), new, _ws(new, [1, 7, 2, 0.5, 0.25]),
                       [Edit(4, 4, "really ", "insert"), Edit(11, 11, " ", "split")])
    assert [(r.clean, r.perturbed, r.perturbed_score) for r in rows] == [
        ("Who", "Who", 1), ("", "really", 7), ("wrote", "wrote", 2), ("it?", "i t?", 0.75)]
    assert [r.changed for r in rows] == [False, True, False, True]


def test_align_without_edits_diffs_the_texts():
    old, new = "how old is he", "how old is she"
    rows = align_words(old, _ws(old, [1, 1, 1, 1]), new, _ws(new, [2, 2, 2, 2]))
    assert [(r.clean, r.perturbed) for r in rows] == [("how", "how"), ("old", "old"), ("is", "is"), ("he", "she")]


def test_answer_move_sentences():
    assert answer_move(("cat", 12, 15), ("a cat and a truck", 10, 27)) == \
        "grew: 'cat' (12-15) -> 'a cat and a truck' (10-27)"
    assert answer_move(("cat and", 12, 19), ("cat", 12, 15)).startswith("shrank")
    assert answer_move(("cat", 12, 15), None) == "lost: 'cat' (12-15) -> no answer"


# ---------------------------------------------------------------------------------------- the CLI


def _run(argv, capsys):
    from core.explain.cli import main

    rc = main(argv)
    return rc, capsys.readouterr().err


def test_cli_writes_clean_and_perturbed_attributions(engines, tmp_path, capsys):
    out = tmp_path / "why.json"
    rc, err = _run(["--model", "minilm-squad-v2", "--context", CONTEXT, "--question", QUESTION,
                    "--perturbation", "keyboard_Q:p=0.5", "--seed", "1", "--steps", "16", "--json", str(out)], capsys)
    assert rc == 0, err
    d = json.loads(out.read_text())
    assert d["clean"]["answer"]["text"] == "cat"
    q = [t for t in d["clean"]["tokens"] if t["segment"] == "question"]
    assert [t["text"] for t in q] == ["What", "animal", "does", "Maria", "have", "?"]
    assert all(t["score"] == pytest.approx(t["score_start"] + t["score_end"], abs=2e-6) for t in q)
    p = d["perturbed"]
    assert p["perturbation"] == "keyboard_Q:p=0.5" and p["seed"] == 1 and p["field"] == "question"
    assert p["question"] == "Wjat anomal does Maria have?"   # rng_for(1, example, spec, 0): a sweep's repeat 0
    assert [(r["clean"], r["perturbed"], r["changed"]) for r in d["change"]["alignment"]][:2] == [
        ("What", "Wjat", True), ("animal", "anomal", True)]
    assert d["change"]["answer_move"].endswith(f"-> {p['answer']['text']!r} ({p['answer']['start']}-"
                                               f"{p['answer']['end']})")


@pytest.mark.parametrize("argv, message", [
    (["--model", "nope"], "no model named 'nope'"),
    (["--model", "minilm-squad", "--perturbation", "keyboard_Q"], "--perturbation needs --seed"),
    (["--model", "minilm-squad", "--seed", "3"], "--seed is only for --perturbation"),
    (["--model", "minilm-squad", "--perturbation", "no_such_thing", "--seed", "0"], "no_such_thing"),
    (["--model", "minilm-squad", "--perturbation", "spell_numerals_Q", "--seed", "0"], "nothing it can change"),
])
def test_cli_refuses_bad_input_with_one_line(tmp_path, capsys, argv, message):
    from core.explain.cli import main

    base = ["--context", CONTEXT, "--question", QUESTION, "--json", str(tmp_path / "o.json")]
    try:
        rc = main(argv + base)
    except SystemExit as e:   # argparse's own errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()


def test_cli_refuses_a_folder_or_the_model_as_output(tmp_path, capsys):
    from core.explain.cli import main
    from core.qa.registry import get_entry

    inside = get_entry("minilm-squad").local_dir() / "why.json"
    for target in (tmp_path, inside):
        rc = main(["--model", "minilm-squad", "--context", CONTEXT, "--question", QUESTION, "--json", str(target)])
        assert rc == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "inside the model's folder" in err
    assert not inside.exists()


def test_python_m_core_explain_refuses_with_exit_status_2(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "o.json"
    done = subprocess.run([sys.executable, "-m", "core.explain", "--model", "nope", "--context", CONTEXT,
                           "--question", QUESTION, "--json", str(out)], cwd=root, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == f"python -m core.explain: error: no model named 'nope' in {root / 'models.toml'}"
    assert not out.exists()
