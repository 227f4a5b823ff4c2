"""Tests for core.config and core.datasets: real files from the data directory, hand-made bad files."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from core import config
from core.datasets import (
    DEMO_PATH,
    Dataset,
    DatasetError,
    demo_dataset,
    discover_datasets,
    eval_contexts,
    find_eval_overlap,
    load_demo,
    load_squad,
    normalize_context,
    pair_challenge,
    squad_dev_minus_xquad,
)
from core.langid import detect_lang, lang_from_filename
from core.types import Answer, QAExample


@pytest.fixture(scope="module")
def data() -> Path:
    path = config.data_dir()
    if path is None:
        pytest.skip("no data directory: set QAX_DATA_DIR or provide ../shared/data")
    return path


@pytest.fixture(scope="module")
def xquad_en(data) -> Dataset:
    return load_squad(data / "xquad" / "xquad.en.json")


def write(tmp_path: Path, doc, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False),
                    encoding="utf-8")
    return path


def squad_doc(qas, context="Alice met Bob in Paris in 1999.", **article) -> dict:
    return {"version": "1.1", "data": [{"title": "T", **article,
                                        "paragraphs": [{"context": context, "qas": qas}]}]}


# ---------------------------------------------------------------------------------------------
# config


def test_data_dir_env_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("QAX_DATA_DIR", str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="QAX_DATA_DIR=.*nope.*not an existing directory"):
        config.data_dir()
    monkeypatch.setenv("QAX_DATA_DIR", str(tmp_path))
    assert config.data_dir() == tmp_path.resolve()


def test_data_dir_default_and_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("QAX_DATA_DIR", raising=False)
    default = config.repo_root().parent / "shared" / "data"
    assert config.data_dir() == (default.resolve() if default.is_dir() else None)
    assert (config.repo_root() / "core" / "config.py").is_file()
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "c" / "d"))
    assert config.cache_dir() == tmp_path / "c" / "d"
    assert (tmp_path / "c" / "d").is_dir()


# ---------------------------------------------------------------------------------------------
# real files


def test_xquad_en(xquad_en):
    assert (xquad_en.name, xquad_en.lang, len(xquad_en), len(xquad_en.contexts())) == \
        ("xquad.en", "en", 1190, 240)
    first = xquad_en.examples[0]
    assert first.id == "56beb4343aeaaa14008c925b"
    assert first.question == "How many points did the Panthers defense surrender?"
    assert first.answers == (Answer("308", 34),)
    assert first.title == "Super_Bowl_50"
    assert xquad_en.by_id[first.id] is first
    assert xquad_en.report == [] and xquad_en.stats == {}


def test_xquad_languages_from_file_names(data):
    zh = load_squad(data / "xquad" / "xquad.zh.json")
    assert zh.lang == "zh" and zh.examples[0].lang == "zh"
    assert zh.examples[0].question == "黑豹队的防守丢了多少分？"
    assert zh.examples[0].answers == (Answer("308", 10),)
    assert load_squad(data / "xquad" / "xquad.de.json").lang == "de"
    assert load_squad(data / "xquad" / "xquad.de.json", "fr").lang == "fr"  # explicit arg wins


def test_noiseqa_keyboard_pairs_with_xquad_en_by_id(data, xquad_en):
    keyboard = load_squad(data / "noiseqa" / "Synthetic" / "xquad-keyboard-synthetic.json")
    pairing = pair_challenge(xquad_en, keyboard)
    assert pairing.rule == "id"
    assert len(pairing.pairs) == 1190
    assert pairing.unmatched_original == [] and pairing.unmatched_challenge == []
    assert pairing.context_mismatches == []
    assert sum(o.question != c.question for o, c in pairing.pairs) == 1112  # NoiseQA README
    orig, chal = pairing.pairs[0]
    assert orig.id == chal.id == "56beb4343aeaaa14008c925b"
    assert chal.question == "Hpw many points did the Panthers defense surrender?"
    assert chal.answers == orig.answers


def test_squad_dev_minus_xquad(data, xquad_en):
    ds = squad_dev_minus_xquad(data)
    assert (len(ds), len(ds.contexts()), ds.lang) == (9380, 1827, "en")
    assert ds.report[-1] == ("removed 240 paragraphs (1190 questions) shared with XQuAD; "
                             "1827 paragraphs, 9380 questions left")
    assert not set(ds.by_id) & set(xquad_en.by_id)
    full = load_squad(data / "squad" / "dev-v1.1.json")
    assert (len(full), len(full.contexts())) == (10570, 2067)
    assert sum(len(e.answers) for e in full.examples) == 34726


def test_eval_contexts_and_overlap(data, xquad_en):
    contexts = eval_contexts(data)
    assert len(contexts) == 11473
    assert normalize_context(xquad_en.examples[0].context) in contexts
    zh = load_squad(data / "xquad" / "xquad.zh.json")
    assert all(normalize_context(c) in contexts for c in zh.contexts())
    assert find_eval_overlap(squad_dev_minus_xquad(data), contexts) == []
    # one TyDi QA training paragraph is also an MLQA-en dev paragraph: the trainer must drop it
    tydi = load_squad(data / "train" / "tydiqa" / "english_tydiqa_train.json")
    assert find_eval_overlap(tydi, contexts) == ["english--4446285799332191952-0"]


def test_only_mlqa_can_be_trained_on_and_only_when_named(data):
    """Issue 29 lets German models train on MLQA-de: a run that names an MLQA file leaves that
    file (and only it) out of the evaluation contexts; XQuAD and NoiseQA never leave."""
    mlqa_de = data / "eval" / "mlqa" / "dev-context-de-question-de.json"
    de = load_squad(mlqa_de)
    everything = eval_contexts(data)
    assert all(normalize_context(c) in everything for c in de.contexts())
    without = eval_contexts(data, trained_on=[mlqa_de])
    assert not any(normalize_context(c) in without for c in de.contexts())
    # only its contexts went: none of MLQA-de's is in another evaluation file (counted), the
    # other MLQA files stay
    assert len(everything) - len(without) == len({normalize_context(c) for c in de.contexts()})
    zh = load_squad(data / "eval" / "mlqa" / "dev-context-zh-question-zh.json")
    assert all(normalize_context(c) in without for c in zh.contexts())
    with pytest.raises(ValueError, match="only MLQA .* may be trained on, not .*xquad.de.json"):
        eval_contexts(data, trained_on=[data / "xquad" / "xquad.de.json"])


def test_cmrc_train_loads_in_chinese_with_repaired_offsets(data):
    ds = load_squad(data / "train" / "cmrc2018" / "cmrc2018_train.json")
    assert (ds.lang, len(ds)) == ("zh", 10142)
    assert ds.stats == {"offsets_repaired": 21}
    assert ds.report[0].startswith("21 answer offsets that did not match the answer text, moved "
                                   "to the nearest occurrence; question ids: TRAIN_876_QUERY_0, ")
    # the file says 342; the text starts one character earlier
    assert ds.by_id["TRAIN_876_QUERY_0"].answers == (Answer("跳海", 341),)
    for ex in ds.examples:
        for a in ex.answers:
            assert ex.context[a.answer_start:a.answer_start + len(a.text)] == a.text


def test_cmrc_dev_drops_extra_answers_missing_from_context(data):
    ds = load_squad(data / "train" / "cmrc2018" / "cmrc2018_dev.json")
    assert (ds.lang, len(ds)) == ("zh", 3219)
    assert ds.stats == {"offsets_repaired": 7, "answers_dropped": 193}
    # answer 2 of 3 ("...机会。" with a final full stop the context lacks) is dropped
    assert [a.answer_start for a in ds.by_id["DEV_6_QUERY_2"].answers] == [165, 130]


def test_mlqa_rebuilt_test_file_has_no_gold(data):
    ds = load_squad(data / "eval" / "mlqa" / "test-context-de-question-de.partial.json")
    assert (ds.lang, len(ds)) == ("de", 3821)
    assert ds.stats == {"answers_empty": 3821, "no_gold": 3821}
    assert all(ex.answers == () for ex in ds.examples)


def test_round_trip_real_file(data, tmp_path, xquad_en):
    raw = json.loads((data / "xquad" / "xquad.en.json").read_text(encoding="utf-8"))
    doc = xquad_en.to_squad_json(tmp_path / "out.json")
    for article in doc["data"]:
        assert article.pop("lang") == "en"
    assert doc["data"] == raw["data"]  # same articles, paragraphs, questions, answers
    again = load_squad(tmp_path / "out.json")
    assert again.examples == xquad_en.examples and again.lang == "en"


def test_round_trip_keeps_repairs_languages_and_impossible(tmp_path):
    doc = squad_doc([{"id": "a", "question": "Who?", "answers": [{"text": "Bob", "answer_start": -1}]},
                     {"id": "b", "question": "Why?", "answers": [], "is_impossible": True}])
    doc["data"].append({"title": "U", "lang": "de", "paragraphs": [
        {"context": "Er kam 2001.", "qas": [{"id": "c", "question": "Wann?",
                                             "answers": [{"text": "2001", "answer_start": 7}]}]}]})
    ds = load_squad(write(tmp_path, doc, "mixed.en.json"))
    assert ds.lang == "mul" and [e.lang for e in ds.examples] == ["en", "en", "de"]
    assert ds.stats == {"offsets_recovered": 1}
    back = load_squad(io.StringIO(json.dumps(ds.to_squad_json())))
    assert back.examples == ds.examples and back.stats == {}
    assert back.examples[1].is_impossible and back.examples[1].answers == ()


# ---------------------------------------------------------------------------------------------
# DuReader-style -1 offsets and offset repair


def test_minus_one_offset_unique_is_recovered(tmp_path):
    ds = load_squad(write(tmp_path, squad_doc(
        [{"id": "q1", "question": "Where?", "answers": [{"text": "Paris", "answer_start": -1}]}])))
    assert ds.examples[0].answers == (Answer("Paris", 17),)
    assert ds.stats == {"offsets_recovered": 1}


def test_minus_one_offset_ambiguous_is_refused_unless_first(tmp_path):
    path = write(tmp_path, squad_doc(
        [{"id": "q7", "question": "Who?", "answers": [{"text": "Bob", "answer_start": -1}]}],
        context="Bob met Alice. Then Bob left."))
    with pytest.raises(DatasetError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[0\]\.answers\[0\] "
                       r"\(question id 'q7'\): answer_start is -1 and the answer 'Bob' occurs "
                       r"2 times in the context.*on_ambiguous='first'"):
        load_squad(path)
    ds = load_squad(path, on_ambiguous="first")
    assert ds.examples[0].answers == (Answer("Bob", 0),)
    assert ds.stats == {"ambiguous_first": 1}
    with pytest.raises(ValueError, match="on_ambiguous must be one of error, first, nearest"):
        load_squad(path, on_ambiguous="last")


def test_minus_one_offset_missing_text_names_the_id(tmp_path):
    path = write(tmp_path, squad_doc(
        [{"id": "q9", "question": "Who?", "answers": [{"text": "Carol", "answer_start": -1}]}]))
    with pytest.raises(DatasetError, match=r"qas\[0\] \(question id 'q9'\): no answer text occurs "
                                           r"in the context \(first answer: 'Carol'\)"):
        load_squad(path)


def test_wrong_offset_moves_to_nearest_occurrence(tmp_path):
    # "Bob" at 0 and 20; the file says 19 -> 20 is nearest
    ds = load_squad(write(tmp_path, squad_doc(
        [{"id": "q1", "question": "Who?", "answers": [{"text": "Bob", "answer_start": 19}]}],
        context="Bob met Alice. Then Bob left.")))
    assert ds.examples[0].answers == (Answer("Bob", 20),)
    assert ds.stats == {"offsets_repaired": 1}
    assert ds.report[0] == ("1 answer offsets that did not match the answer text, moved to the "
                            "nearest occurrence; question ids: q1")


# ---------------------------------------------------------------------------------------------
# malformed files


@pytest.mark.parametrize("doc, message", [
    ("{not json", r"bad\.json: not valid JSON"),
    ([1, 2], r"top level should be an object with 'data', got list"),
    ({"version": "1.1"}, r"top level has no 'data'"),
    ({"data": {}}, r"top level\.data should be list, got dict"),
    ({"data": [{"title": "x", "paragraphs": []}, {"title": "y"}]}, r"data\[1\] has no 'paragraphs'"),
    ({"data": ["oops"]}, r"data\[0\] is not an object \(got str\)"),
    ({"data": [{"paragraphs": [{"context": "c"}]}]}, r"data\[0\]\.paragraphs\[0\] has no 'qas'"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, r"data\[0\]\.paragraphs\[0\] has no 'context'"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": []}, {"id": "b", "answers": []}]),
     r"data\[0\]\.paragraphs\[0\]\.qas\[1\] has no 'question'"),
    (squad_doc([{"id": "a", "question": "Q?"}]), r"qas\[0\] has no 'answers'"),
    (squad_doc([{"question": "Q?", "answers": []}]), r"qas\[0\] has no 'id'"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": ["Bob"]}]),
     r"qas\[0\]\.answers\[0\] should be an object with 'text' and 'answer_start', got str"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": [{"text": "Bob", "answer_start": "6"}]}]),
     r"answers\[0\]\.answer_start should be int, got str"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": [{"text": "Bob", "answer_start": True}]}]),
     r"answers\[0\]\.answer_start should be int, got bool"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": [{"answer_start": 6}]}]),
     r"answers\[0\] has no 'text'"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": []}, {"id": "a", "question": "R?", "answers": []}]),
     r"qas\[1\]: duplicate question id 'a' \(first at data\[0\]\.paragraphs\[0\]\.qas\[0\]\)"),
    (squad_doc([{"id": "a", "question": "Q?", "is_impossible": True,
                 "answers": [{"text": "Bob", "answer_start": 10}]}]),
     r"question id 'a'\) is marked is_impossible but has 1 answers"),
    (squad_doc([{"id": "a", "question": "Q?", "answers": []}], title=7),
     r"data\[0\]\.title should be str, got int"),
])
def test_malformed_files(tmp_path, doc, message):
    with pytest.raises(DatasetError, match=message):
        load_squad(write(tmp_path, doc))


def test_missing_file():
    with pytest.raises(DatasetError, match=r"nowhere\.json: file not found"):
        load_squad("/nonexistent/nowhere.json")


def test_squad_v2_impossible_and_file_objects(tmp_path):
    doc = squad_doc([
        {"id": "p", "question": "Who?", "answers": [{"text": "Alice", "answer_start": 0}],
         "is_impossible": False},
        {"id": "i", "question": "When did Bob die?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "1999", "answer_start": 26}]}])
    doc["version"] = "v2.0"
    text = json.dumps(doc)
    for source in (io.StringIO(text), io.BytesIO(b"\xef\xbb\xbf" + text.encode())):  # BOM too
        ds = load_squad(source, name="v2")
        assert ds.name == "v2"
        assert [(e.id, e.is_impossible, e.answers) for e in ds.examples] == \
            [("p", False, (Answer("Alice", 0),)), ("i", True, ())]
        assert ds.stats == {}  # an impossible question is not "no gold"


# ---------------------------------------------------------------------------------------------
# language


@pytest.mark.parametrize("name, lang", [
    ("xquad.de.json", "de"), ("/x/eval/mlqa/dev-context-zh-question-zh.json", "zh"),
    ("test-context-de-question-en.json", "de"), ("cmrc2018_train.json", "zh"),
    ("DuReader_robust-dev.json", "zh"), ("english_tydiqa_train.json", "en"),
    ("dev-v1.1.json", None), ("xquad-keyboard-synthetic.json", None),
    ("amazon_reviews_v1.0.json", None),
])
def test_lang_from_filename(name, lang):
    assert lang_from_filename(name) == lang


@pytest.mark.parametrize("text, lang", [
    ("范廷颂是越南罗马天主教枢机，1963年被任为主教。", "zh"),
    ("Der Papst ernannte ihn 1963 zum Bischof von Bac Ninh.", "en"),  # Latin script: en
    ("Пантеры пропустили всего 308 очков", "ru"), ("Οι Πάνθηρες", "el"),
    ("ดิ แพนเธอร์ส", "th"), ("दिल्ली भारत की राजधानी है", "hi"), ("الفهود", "ar"),
    ("Apple (苹果) and Microsoft in Seattle", "en"),  # 2 of 22 letters CJK: below 30 %
    ("", "en"),
])
def test_detect_lang(text, lang):
    assert detect_lang(text) == lang


def test_lang_detected_from_text_when_name_says_nothing(tmp_path):
    doc = squad_doc([{"id": "z", "question": "谁？", "answers": [{"text": "李秀云", "answer_start": 0}]}],
                    context="李秀云创建了茶园。")
    ds = load_squad(write(tmp_path, doc, "data.json"))
    assert ds.lang == "zh"
    assert ds.report == ["language not given: guessed 'zh' from the script of the text"]
    doc["data"][0]["lang"] = "yue"  # a per-article lang wins over detection
    assert load_squad(write(tmp_path, doc, "data.json")).lang == "yue"


# ---------------------------------------------------------------------------------------------
# pairing rules


def ex(id_, question, context="C"):
    return QAExample(id=id_, question=question, context=context)


def test_pair_by_position_when_no_id_is_shared():
    # the second challenge context is an edited copy (a context perturbation): still the same item
    orig = Dataset("o", "en", [ex("a", "Q1", "The cat sat on the mat."), ex("b", "Q2", "The cat sat on the mat.")])
    chal = Dataset("c", "en", [ex("x", "q1", "The cat sat on the mat."), ex("y", "q2", "The cat sat on teh mat.")])
    p = pair_challenge(orig, chal)
    assert p.rule == "position"
    assert [(o.id, c.id) for o, c in p.pairs] == [("a", "x"), ("b", "y")]
    assert p.context_mismatches == ["b"]
    # a different paragraph is not the same item: refused, naming the position
    chal = Dataset("c", "en", [ex("x", "q1", "The cat sat on the mat."), ex("y", "q2", "Paris is in France.")])
    with pytest.raises(DatasetError, match=r"by position: 1 positions join different items \(first: b / y: "
                                           r"different contexts\)"):
        pair_challenge(orig, chal)


def test_pair_by_id_with_unmatched_and_refusal():
    orig = Dataset("o", "en", [ex("a", "Q1"), ex("b", "Q2"), ex("c", "Q3")])
    chal = Dataset("c", "en", [ex("c", "q3"), ex("z", "q9"), ex("a", "q1")])
    p = pair_challenge(orig, chal)
    assert p.rule == "id"
    assert [(o.id, c.question) for o, c in p.pairs] == [("a", "q1"), ("c", "q3")]
    assert (p.unmatched_original, p.unmatched_challenge) == (["b"], ["z"])
    with pytest.raises(DatasetError, match=r"cannot pair 'o' \(3 questions\) with 'd' \(1 "
                                           r"questions\): by id: no question id in common \| "
                                           r"by position: the files have different numbers of questions$"):
        pair_challenge(orig, Dataset("d", "en", [ex("q", "?")]))


def test_dataset_refuses_duplicate_ids():
    with pytest.raises(DatasetError, match="d: duplicate question id 'a'"):
        Dataset("d", "en", [ex("a", "Q1"), ex("a", "Q2")])


# ---------------------------------------------------------------------------------------------
# discovery


def test_discover_datasets(data):
    infos = {i.name: i for i in discover_datasets(data)}
    xquad = [i for i in infos.values() if i.name.startswith("xquad/")]
    assert len(xquad) == 12 and all(i.role == "eval" for i in xquad)
    assert infos["xquad/xquad.th"].lang == "th"
    challenges = sorted(i.name for i in infos.values() if i.role == "challenge" and not i.name.startswith("natural:"))
    assert challenges == [f"noiseqa/Synthetic/xquad-{k}-synthetic"
                          for k in ("asr", "keyboard", "translation")]
    natural = sorted(i.name for i in infos.values() if i.role == "challenge" and i.name.startswith("natural:"))
    assert natural == ["natural:disfl-qa/dev/disfluent", "natural:disfl-qa/test/disfluent",
                       "natural:heysquad/asr_human", "natural:heysquad/asr_tts"]
    assert infos["noiseqa/Synthetic/xquad-asr-synthetic"].original == data / "xquad" / "xquad.en.json"
    assert (infos["squad/dev-v1.1"].role, infos["squad/dev-v1.1"].lang) == ("eval", "en")
    mlqa = infos["eval/mlqa/dev-context-zh-question-zh"]
    assert (mlqa.role, mlqa.lang) == ("eval", "zh")
    cmrc = infos["train/cmrc2018/cmrc2018_train"]
    assert (cmrc.role, cmrc.lang, cmrc.path) == ("train", "zh", data / "train/cmrc2018/cmrc2018_train.json")
    assert infos["train/squadshifts/reddit_v1.0"].lang == "en"
    roles = [i.role for i in discover_datasets(data)]
    assert roles == sorted(roles, key=["eval", "challenge", "train"].index)
    assert "misspellings/wikipedia" not in infos


def test_an_evaluation_set_of_ones_own_under_eval_is_offered_and_never_trained_on(tmp_path):
    """A SQuAD-style file anywhere under eval/ is an evaluation set: listed with the language its
    name gives, loadable by that name, and its contexts are refused as training data."""
    from core.datasets import eval_contexts, load_dataset

    own = tmp_path / "eval" / "own" / "walk.zh.json"
    own.parent.mkdir(parents=True)
    context = "望川桥由工匠周明远于1907年主持修建。"
    own.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "w1", "question": "望川桥是谁主持修建的？", "answers": [{"text": "周明远", "answer_start": 6}]}]}]}]}),
        encoding="utf-8")
    (tmp_path / "eval" / "notes.txt").write_text("not a data set")
    infos = {i.name: i for i in discover_datasets(tmp_path)}
    assert list(infos) == ["eval/own/walk.zh"]
    assert (infos["eval/own/walk.zh"].role, infos["eval/own/walk.zh"].lang) == ("eval", "zh")
    ds = load_dataset("eval/own/walk.zh", tmp_path)
    assert (ds.lang, [e.answers[0].text for e in ds.examples]) == ("zh", ["周明远"])
    assert len(eval_contexts(tmp_path)) == 1


def test_discover_needs_a_directory(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        discover_datasets(tmp_path / "missing")


# ---------------------------------------------------------------------------------------------
# the bundled demo set


def test_demo_file_offsets_and_shape():
    raw = json.loads(DEMO_PATH.read_text(encoding="utf-8"))
    assert [a["lang"] for a in raw["data"]] == ["en"] * 4 + ["de"] * 4 + ["zh"] * 4
    n_questions = 0
    for article in raw["data"]:
        (paragraph,) = article["paragraphs"]
        context = paragraph["context"]
        assert 2 <= len(paragraph["qas"]) <= 3
        for qa in paragraph["qas"]:
            assert re.fullmatch(r"demo-(en|de|zh)-0[1-4]-q[1-3]", qa["id"])
            (answer,) = qa["answers"]
            start = answer["answer_start"]
            assert context[start:start + len(answer["text"])] == answer["text"], qa["id"]
            n_questions += 1
    assert n_questions == 36


def test_load_demo():
    parts = load_demo()
    assert [(d.name, d.lang, len(d), len(d.contexts())) for d in parts] == \
        [("demo.en", "en", 12, 4), ("demo.de", "de", 12, 4), ("demo.zh", "zh", 12, 4)]
    assert all(d.stats == {} for d in parts)  # no offset needed repair
    de = demo_dataset("de")
    assert de.by_id["demo-de-01-q1"].answers == (Answer("1952", 38),)  # "Die Bäckerei Sonnenkorn wurde im Jahr "
    assert demo_dataset("zh").by_id["demo-zh-01-q2"].answers[0].text == "李秀云"
    with pytest.raises(DatasetError, match="no 'fr' part"):
        demo_dataset("fr")
