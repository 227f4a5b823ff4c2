"""Beat the AI core: sampler, spans, judging, the store (crash safety), validation, export, stats."""
import json
import random
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from core.collect import beat, beat_stats, beat_store
from core.collect.beat import Passage, PassageSampler
from core.collect.beat_store import BeatStore
from core.datasets import demo_dataset, load_squad
from core.types import Answer, QAExample, Span

ROOT = Path(__file__).resolve().parents[1]

# The first demo passage (Carrow Point Lighthouse): offsets checked by hand.
LIGHT = beat.passages(demo_dataset("en"))[0]
DATE = (112, 127)        # "14 October 1871"
ON_14 = (109, 114)       # "on 14"           F1 vs DATE: P 1/2, R 1/3 -> exactly 0.4
OCT = (115, 127)         # "October 1871"    F1 vs DATE: P 2/2, R 2/3 -> 0.8
GRANITE = (36, 52)       # "granite headland"
METRES = (215, 224)      # "34 metres"
KEEPER = (325, 341)      # "Margaret Ellison"


def span(p: Passage, s: tuple[int, int], score: float = 0.5) -> Span:
    return Span(p.context[s[0]:s[1]], s[0], s[1], score)


@pytest.fixture
def store(tmp_path):
    with BeatStore(tmp_path / "beat.sqlite") as s:
        yield s


# ---------------------------------------------------------------------------------------------
# Passages and the sampler


def test_passages_are_the_distinct_contexts_with_stable_ids():
    ps = beat.passages(demo_dataset("en"))
    assert len(ps) == 4  # 12 questions, 3 per paragraph
    assert LIGHT.context[slice(*DATE)] == "14 October 1871"
    assert LIGHT.context[slice(*ON_14)] == "on 14" and LIGHT.context[slice(*GRANITE)] == "granite headland"
    assert LIGHT.context[slice(*METRES)] == "34 metres" and LIGHT.context[slice(*KEEPER)] == "Margaret Ellison"
    assert LIGHT.title == "Carrow Point Lighthouse" and LIGHT.lang == "en" and LIGHT.dataset == "demo.en"
    assert LIGHT.id == beat.passage_id(LIGHT.context) and len({p.id for p in ps}) == 4


def test_sampler_covers_every_passage_once_per_round():
    s = PassageSampler.new(7, random.Random(3))
    draws = [s.next() for _ in range(21)]
    for r in range(3):
        assert sorted(draws[7 * r:7 * r + 7]) == list(range(7))
    assert draws[:7] != draws[7:14]  # a new order each round
    assert all(a != b for a, b in zip(draws, draws[1:]))  # never the same twice in a row


def test_sampler_never_repeats_across_the_round_boundary():
    # Search seeds for one whose second round would start with the last of the first round.
    for seed in range(500):
        first = list(range(3))
        random.Random(f"{seed}:0").shuffle(first)
        second = list(range(3))
        random.Random(f"{seed}:1").shuffle(second)
        if second[0] == first[-1]:
            break
    else:
        pytest.fail("no seed with a colliding round boundary among 500")
    s = PassageSampler(3, seed)
    draws = [s.next() for _ in range(6)]
    assert draws[:3] == first
    assert draws[3] == second[1] and draws[4] == second[0] and draws[5] == second[2]


def test_sampler_rebuilt_from_its_state_at_every_draw_still_covers_every_passage():
    # The page keeps only the state and rebuilds the sampler at each "New passage". It used to
    # decide the round-boundary swap from the last passage shown, so a rebuilt sampler swapped
    # inside a round: [0, 0, 2] for this seed (passage 0 twice, passage 1 never).
    state = {}
    draws = [beat.passage_turn(state, "demo", 3, rng=random.Random(0))]
    draws += [beat.passage_turn(state, "demo", 3, new=True) for _ in range(8)]
    for r in range(3):
        assert sorted(draws[3 * r:3 * r + 3]) == [0, 1, 2]
    assert all(a != b for a, b in zip(draws, draws[1:]))
    kept = PassageSampler(3, state["beat_sampler"]["seed"])
    assert [kept.next() for _ in range(9)] == draws  # the same draws as one sampler kept alive
    assert beat.passage_turn(state, "demo", 3) == draws[-1]  # a rerun keeps the passage


def test_sampler_state_round_trips_through_json():
    a = PassageSampler.new(5, random.Random(11))
    [a.next() for _ in range(3)]
    b = PassageSampler.from_state(json.loads(json.dumps(a.to_state())))
    assert [a.next() for _ in range(8)] == [b.next() for _ in range(8)]
    assert PassageSampler(1, 0).next() == 0 and PassageSampler(1, 0).next() == 0
    with pytest.raises(ValueError, match="at least one passage"):
        PassageSampler(0, 1)
    with pytest.raises(ValueError, match="lacks"):
        PassageSampler.from_state({"n": 3})


# ---------------------------------------------------------------------------------------------
# Spans and judging


def test_find_occurrences_exact_then_case_insensitive():
    ctx = "The tower is white. The TOWER was built in 1871."
    assert beat.find_occurrences(ctx, " The ") == [(0, 3), (20, 23)]
    assert beat.find_occurrences(ctx, "tower") == [(4, 9)]
    assert beat.find_occurrences(ctx, "the tower") == [(0, 9), (20, 29)]
    assert beat.find_occurrences(ctx, "steeple") == [] and beat.find_occurrences(ctx, "  ") == []


def test_span_tokens_keep_punctuation_apart():
    ctx = "Its best-known keeper, Margaret Ellison."
    assert [ctx[a:b] for a, b in beat.span_tokens(ctx)] == [
        "Its", "best-known", "keeper", ",", "Margaret", "Ellison", "."]


def test_judge_f1_and_the_ensemble_rule():
    verdicts, outcome = beat.judge("14 October 1871", {"a": span(LIGHT, OCT),
                                                       "b": span(LIGHT, GRANITE)}, "en")
    assert [(v.model, v.f1, v.won) for v in verdicts] == [("a", 0.8, True), ("b", 0.0, False)]
    assert outcome == "model"  # any model winning is enough
    # F1 exactly at the threshold does not win (strictly above 0.4 wins)
    verdicts, outcome = beat.judge("14 October 1871", {"a": span(LIGHT, ON_14), "b": None}, "en")
    assert [(v.f1, v.won) for v in verdicts] == [(0.4, False), (0.0, False)] and outcome == "human"
    assert verdicts[1].answer == "" and verdicts[1].start is None
    _, outcome = beat.judge("14 October 1871", {"a": span(LIGHT, ON_14)}, "en", threshold=0.3)
    assert outcome == "model"
    with pytest.raises(ValueError, match="win threshold must lie in"):
        beat.judge("x", {"a": None}, "en", threshold=1.0)
    with pytest.raises(ValueError, match="at least one model"):
        beat.judge("x", {}, "en")


# ---------------------------------------------------------------------------------------------
# The store


def test_record_attempt_stores_everything(store):
    a = store.record_attempt(LIGHT, "  When was the lamp first lit?  ", DATE,
                             {"m1": span(LIGHT, OCT, 0.9), "m2": span(LIGHT, GRANITE, 0.2)},
                             user=" Ada  Lovelace ", session="s1", now="2024-01-01T00:00:00+00:00")
    assert (a.id, a.question, a.answer_text, a.answer_start, a.answer_end) == (
        1, "When was the lamp first lit?", "14 October 1871", 112, 127)
    assert (a.user, a.session, a.dataset, a.title, a.lang, a.threshold, a.outcome) == (
        "Ada Lovelace", "s1", "demo.en", "Carrow Point Lighthouse", "en", 0.4, "model")
    assert a.passage_id == LIGHT.id and a.context == LIGHT.context
    assert a.created_at == "2024-01-01T00:00:00+00:00"
    assert [(m.model, m.answer, m.start, m.end, m.score, m.f1, m.won) for m in a.models] == [
        ("m1", "October 1871", 115, 127, 0.9, 0.8, True),
        ("m2", "granite headland", 36, 52, 0.2, 0.0, False)]
    b = store.record_attempt(LIGHT, "Where does the tower stand?", GRANITE,
                             {"m1": span(LIGHT, METRES)}, user="", session="s1")
    assert b.outcome == "human" and b.user == "anonymous" and not a.human_won and b.human_won
    assert [x.id for x in store.attempts(passage_id=LIGHT.id)] == [1, 2]
    assert [x.id for x in store.attempts(outcome="human")] == [2]
    assert store.attempts(passage_id="p-none") == []


def test_record_attempt_rejects_bad_input(store):
    m = {"m": span(LIGHT, OCT)}
    with pytest.raises(ValueError, match="question is empty"):
        store.record_attempt(LIGHT, "  ", DATE, m, user="u", session="s")
    with pytest.raises(ValueError, match=r"\(5, 5\) is not a non-empty range"):
        store.record_attempt(LIGHT, "q?", (5, 5), m, user="u", session="s")
    with pytest.raises(ValueError, match="not a non-empty range inside the passage of 412"):
        store.record_attempt(LIGHT, "q?", (400, 413), m, user="u", session="s")
    with pytest.raises(ValueError, match="has no words"):
        store.record_attempt(LIGHT, "q?", (34, 35), m, user="u", session="s")  # the article "a"
    with pytest.raises(ValueError, match="two integer character offsets"):
        store.record_attempt(LIGHT, "q?", (1.0, 5), m, user="u", session="s")
    with pytest.raises(ValueError, match="does not match its text"):
        store.record_attempt(Passage("p0", LIGHT.context, "", "en", "x"), "q?", DATE, m,
                             user="u", session="s")
    assert store.attempts() == []  # nothing half-written


def test_each_attempt_is_visible_from_a_fresh_connection_at_once(store):
    store.record_attempt(LIGHT, "When was it first lit?", DATE, {"m": span(LIGHT, OCT)},
                         user="u", session="s")
    other = sqlite3.connect(store.path)  # the first connection stays open
    try:
        assert other.execute("SELECT question, outcome FROM attempts").fetchall() == [
            ("When was it first lit?", "model")]
        assert other.execute("SELECT model, f1 FROM model_answers").fetchall() == [("m", 0.8)]
    finally:
        other.close()
    with BeatStore(store.path) as again:
        assert [a.question for a in again.attempts()] == ["When was it first lit?"]


def test_an_attempt_survives_the_process_being_killed(tmp_path):
    db = tmp_path / "killed.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from core.collect import beat, beat_store
        from core.datasets import demo_dataset
        from core.types import Span
        p = beat.passages(demo_dataset("en"))[0]
        s = beat_store.BeatStore({str(db)!r})
        s.record_attempt(p, "Who kept the diary?", (325, 341),
                         {{"m": Span("granite", 36, 43, 0.1)}}, user="k", session="s")
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no clean exit
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -9, proc.stderr
    with BeatStore(db) as s:
        [a] = s.attempts()
        assert (a.question, a.answer_text, a.outcome) == ("Who kept the diary?",
                                                          "Margaret Ellison", "human")


def test_db_path_from_argument_env_or_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QAX_BEAT_DB", raising=False)
    assert beat_store.default_db_path() == tmp_path / "cache" / "beat_the_ai.sqlite"
    monkeypatch.setenv("QAX_BEAT_DB", str(tmp_path / "env.sqlite"))
    with BeatStore() as s:
        assert s.path == tmp_path / "env.sqlite"
    with BeatStore(tmp_path / "sub" / "arg.sqlite") as s:
        assert s.path == tmp_path / "sub" / "arg.sqlite" and s.path.exists()
    (tmp_path / "junk.sqlite").write_text("not a database at all, just text " * 100)
    with pytest.raises(ValueError, match="not a usable Beat-the-AI database"):
        BeatStore(tmp_path / "junk.sqlite")


# ---------------------------------------------------------------------------------------------
# Validation


def test_validation_agreement_rules(store):
    a = store.record_attempt(LIGHT, "When was it first lit?", DATE, {"m": span(LIGHT, GRANITE)},
                             user="Author", session="s1")
    assert a.human_won and a.answerable is None and a.validation_status == "unvalidated"
    with pytest.raises(ValueError, match="another person must validate it"):
        store.record_validation(a.id, " author ", DATE, session="s1")
    with pytest.raises(ValueError, match="needs the validator's name"):
        store.record_validation(a.id, "  ", DATE, session="s2")
    v1 = store.record_validation(a.id, "Val One", ON_14, session="s2")  # F1 exactly 0.4 agrees
    assert (v1.answer_text, v1.f1, v1.agrees, v1.threshold) == ("on 14", 0.4, True, 0.4)
    with pytest.raises(ValueError, match="already validated"):
        store.record_validation(a.id, "val one", DATE, session="s3")
    a = store.attempt(a.id)
    assert (a.validations, a.agreements, a.answerable, a.flagged, a.validation_status) == (
        1, 1, True, False, "answerable")
    v2 = store.record_validation(a.id, "Val Two", None, session="s3")  # "not answerable"
    assert (v2.answer_start, v2.answer_text, v2.f1, v2.agrees) == (None, "", 0.0, False)
    a = store.attempt(a.id)
    assert (a.answerable, a.flagged, a.validation_status) == (False, True, "disputed")  # 1-1 tie
    store.record_validation(a.id, "Val Three", OCT, session="s4", threshold=0.9)  # 0.8 < 0.9
    a = store.attempt(a.id)
    assert (a.validations, a.agreements, a.validation_status) == (3, 1, "disputed")
    store.record_validation(a.id, "Val Four", DATE, session="s5")
    store.record_validation(a.id, "Val Five", DATE, session="s6")
    a = store.attempt(a.id)
    assert (a.agreements, a.answerable, a.validation_status) == (3, True, "answerable (disputed)")
    with pytest.raises(ValueError, match="agreement threshold must lie in"):
        store.record_validation(a.id, "Val Six", DATE, session="s7", threshold=0)
    with pytest.raises(ValueError, match="no attempt #99"):
        store.record_validation(99, "Val Six", DATE, session="s7")


def test_validation_queue_order_and_exclusions(store):
    m = {"m": span(LIGHT, GRANITE)}
    q1 = store.record_attempt(LIGHT, "When first lit?", DATE, m, user="A", session="s")
    q2 = store.record_attempt(LIGHT, "Who kept the light?", KEEPER, m, user="B", session="s")
    store.record_attempt(LIGHT, "Where is it?", GRANITE, m, user="A", session="s")  # model won
    q4 = store.record_attempt(LIGHT, "How tall?", METRES, m, user="C", session="s")
    assert [a.id for a in store.validation_queue("a")] == [q2.id, q4.id]
    assert store.validation_queue("  ") == []
    store.record_validation(q2.id, "D", None, session="s")  # q2 disputed, 1 validation
    store.record_validation(q4.id, "D", METRES, session="s")  # q4 agreed, 1 validation
    assert [a.id for a in store.validation_queue("E")] == [q1.id, q2.id, q4.id]
    assert [a.id for a in store.validation_queue("D")] == [q1.id]
    assert [a.id for a in store.validation_queue("C", human_won_only=False)] == [1, 3, 2]


# ---------------------------------------------------------------------------------------------
# Export


def test_export_round_trips_through_load_squad(store, tmp_path):
    keeper = beat.passages(demo_dataset("en"))[1]  # a second passage, questions interleaved
    m = {"m": span(LIGHT, GRANITE)}
    a1 = store.record_attempt(LIGHT, "When was it first lit?", DATE, m, user="A", session="s")
    k_ans = (4, 23)  # "Brackenfield Russet"
    assert keeper.context[4:23] == "Brackenfield Russet"
    a2 = store.record_attempt(keeper, "Which apple is this about?", k_ans,
                              {"m": Span("nothing", 300, 307, 0.1)}, user="A", session="s")
    a3 = store.record_attempt(LIGHT, "Where does it stand?", GRANITE, m, user="A", session="s")
    a4 = store.record_attempt(LIGHT, "Who kept the light?", KEEPER, m, user="A", session="s")
    store.record_validation(a1.id, "V", OCT, session="v")   # agrees: extra gold answer
    store.record_validation(a1.id, "W", DATE, session="w")  # agrees: same answer, not repeated
    store.record_validation(a4.id, "V", METRES, session="v")  # disagrees
    assert a3.outcome == "model" and a2.human_won

    def round_trip(**kw):
        path = tmp_path / "export.json"
        path.write_text(json.dumps(store.export_squad(**kw)), encoding="utf-8")
        return load_squad(path)

    everything = round_trip(validated_only=False, human_won_only=False)
    assert [ex.id for ex in everything] == ["beat-1", "beat-3", "beat-4", "beat-2"]
    assert everything.examples[0] == QAExample(
        "beat-1", "When was it first lit?", LIGHT.context,
        (Answer("14 October 1871", 112), Answer("October 1871", 115)),
        "Carrow Point Lighthouse", "en")
    assert everything.examples[3] == QAExample(
        "beat-2", "Which apple is this about?", keeper.context,
        (Answer("Brackenfield Russet", 4),), keeper.title, "en")
    assert everything.report == [] and everything.stats == {}
    assert [ex.id for ex in round_trip(validated_only=False, human_won_only=True)] == [
        "beat-1", "beat-4", "beat-2"]
    validated = round_trip(validated_only=True, human_won_only=True)
    assert [ex.id for ex in validated] == ["beat-1"]
    assert store.export_dataset(validated_only=True, human_won_only=True).examples == \
        validated.examples
    doc = store.export_squad(validated_only=True, human_won_only=False)
    assert doc["version"] == "1.1" and [a["title"] for a in doc["data"]] == ["Carrow Point Lighthouse"]
    empty = tmp_path / "empty.json"
    with BeatStore(tmp_path / "fresh.sqlite") as fresh:
        empty.write_text(json.dumps(fresh.export_squad(validated_only=False, human_won_only=False)))
    assert len(load_squad(empty)) == 0


def test_export_records_holds_every_detail(store):
    a = store.record_attempt(LIGHT, "When first lit?", DATE, {"m": span(LIGHT, OCT)},
                             user="A", session="s")
    store.record_validation(a.id, "V", DATE, session="v")
    rec = json.loads(json.dumps(store.export_records()))
    assert rec["passages"] == {LIGHT.id: LIGHT.context}
    [att] = rec["attempts"]
    assert att["question"] == "When first lit?" and att["validation_status"] == "answerable"
    assert att["models"] == [{"model": "m", "answer": "October 1871", "start": 115, "end": 127,
                              "score": 0.5, "f1": 0.8, "won": True}]
    assert [(v["validator"], v["agrees"]) for v in rec["validations"]] == [("V", True)]


# ---------------------------------------------------------------------------------------------
# Statistics


TINY_CTX = "Margaret Ellison kept the light burning for 31 years. The white tower is 34 metres tall."
TINY = [  # (question, answer): hand-counted words, longest common n-gram, wh-class
    ("Who kept the light burning?", "Margaret Ellison"),          # 5, 2, 4 "kept the light burning", who
    ("How tall is the white tower?", "34 metres"),                # 6, 2, 3 "the white tower", how
    ("For how many years did she tend it?", "31 years"),          # 8, 2, 1, how
    ("Name the keeper.", "Margaret Ellison"),                     # 3, 2, 1 "the", other
]


def test_question_statistics_exact():
    s = beat_stats.set_statistics("tiny", [(q, TINY_CTX, a, "en") for q, a in TINY])
    assert [(i.question_tokens, i.answer_tokens, i.longest_ngram, i.wh) for i in s.items] == [
        (5, 2, 4, "who"), (6, 2, 3, "how"), (8, 2, 1, "how"), (3, 2, 1, "other")]
    assert (s.n, s.mean_question_tokens, s.mean_answer_tokens, s.mean_longest_ngram) == (
        4, 5.5, 2.0, 2.25)
    assert s.wh_counts() == {"what": 0, "which": 0, "who": 1, "when": 0, "where": 0, "why": 0,
                             "how": 2, "other": 1}
    assert beat_stats.set_statistics("empty", []).mean_question_tokens is None


def test_wh_words_in_three_languages():
    assert beat_stats.wh_word("In which year, and whose diary?", "en") == "which"
    assert beat_stats.wh_word("Whose diary was it?", "en") == "who"
    assert beat_stats.wh_word("Seit wann gibt es die Fähre?", "de") == "when"
    assert beat_stats.wh_word("Welches Instrument baute er?", "de") == "which"
    assert beat_stats.wh_word("谁在什么时候建了桥？", "zh") == "who"
    assert beat_stats.wh_word("望川桥是什么时候建成的？", "zh") == "when"
    assert beat_stats.wh_word("茶园有多少年历史？", "zh") == "how"
    assert beat_stats.wh_word("Quand?", "fr") == "n/a"


def test_dataset_statistics_of_the_demo_set():
    s = beat_stats.dataset_statistics(demo_dataset("en"))
    assert s.n == 12 and s.name == "demo.en"
    q0 = s.items[0]  # "When was Carrow Point Lighthouse first lit?" / "14 October 1871"
    assert (q0.question_tokens, q0.answer_tokens, q0.longest_ngram, q0.wh) == (7, 3, 3, "when")
    assert sum(s.wh_counts().values()) == 12


def test_fooling_rates_answerability_and_tables(store):
    m = lambda a, b: {"a": span(LIGHT, a), "b": span(LIGHT, b)}  # noqa: E731
    x1 = store.record_attempt(LIGHT, "When was it first lit?", DATE, m(OCT, GRANITE),
                              user="A", session="s")          # a wins -> model
    x2 = store.record_attempt(LIGHT, "Who kept the light burning?", KEEPER, m(GRANITE, METRES),
                              user="A", session="s")          # both fooled -> human
    x3 = store.record_attempt(LIGHT, "How tall is the white tower?", METRES, m(GRANITE, METRES),
                              user="A", session="s")          # b wins -> model
    store.record_validation(x2.id, "V", KEEPER, session="v")
    store.record_validation(x3.id, "V", None, session="v")
    atts = store.attempts()
    assert beat_stats.fooling_rates(atts) == [
        {"model": "a", "attempts": 3, "fooled": 2, "fooling_rate": 2 / 3},
        {"model": "b", "attempts": 3, "fooled": 2, "fooling_rate": 2 / 3},
        {"model": "any model (ensemble)", "attempts": 3, "fooled": 1, "fooling_rate": 1 / 3}]
    assert beat_stats.answerability(atts) == {"validated": 2, "answerable": 1, "flagged": 1,
                                        "answerability": 0.5}
    assert beat_stats.fooling_rates([]) == [] and beat_stats.answerability([])["answerability"] is None
    collected = beat_stats.attempt_statistics("collected", atts)
    source = beat_stats.set_statistics("source", [(q, TINY_CTX, a, "en") for q, a in TINY[:2]])
    rows = beat_stats.comparison_rows([collected, source], {"collected": atts})
    assert rows[1] == {"set": "source", "questions": 2, "question_tokens": 5.5,
                       "answer_tokens": 2.0, "longest_common_ngram": 3.5,
                       "model_fooling_rate": None, "human_answerability": None}
    assert rows[0]["model_fooling_rate"] == 1 / 3 and rows[0]["human_answerability"] == 0.5
    assert rows[0]["question_tokens"] == (5 + 5 + 6) / 3  # "When was it first lit" has 5 words
    wh = {(r["set"], r["wh"]): (r["count"], r["share"]) for r in beat_stats.wh_rows([collected, source])}
    assert wh[("collected", "when")] == (1, 1 / 3) and wh[("source", "how")] == (1, 0.5)
    assert beat_stats.distribution_rows([source], "longest_ngram") == [
        {"set": "source", "longest_ngram": 3, "count": 1, "share": 0.5},
        {"set": "source", "longest_ngram": 4, "count": 1, "share": 0.5}]
    with pytest.raises(ValueError, match="no per-question statistic 'colour'"):
        beat_stats.distribution_rows([source], "colour")
    assert Counter(a.outcome for a in atts) == {"model": 2, "human": 1} and x1.outcome == "model"


# ---------------------------------------------------------------------------------------------
# Concurrency: eight writer processes, one SIGKILLed mid-write

WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from core.collect import beat, beat_store
    from core.datasets import demo_dataset
    from core.types import Span
    name, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    p = beat.passages(demo_dataset("en"))[0]
    s = beat_store.BeatStore({db!r})
    v = s.record_validation(1, name, (112, 127), session=name, browser=token)
    print("V", v.id, flush=True)  # acknowledged: the call returned, so it is committed
    for j in range(n):
        a = s.record_attempt(p, f"{{name}} question {{j}}?", (325, 341),
                             {{"m1": Span("granite", 36, 43, 0.1), "m2": None}},
                             user=name, session=name, browser=token)
        print("A", a.id, a.question, flush=True)
""")


def test_eight_concurrent_writers_one_killed_lose_no_acknowledged_write(tmp_path):
    """8 processes write attempts and a validation each into one store at once; one is SIGKILLed
    while it writes. Every write a process acknowledged (its call had returned) is in the store,
    whole (with its model answers), and the store is intact and writable afterwards."""
    import os
    import signal
    import time

    db = tmp_path / "shared.sqlite"
    with BeatStore(db) as s:
        s.record_attempt(LIGHT, "When was it first lit?", DATE, {"m": span(LIGHT, GRANITE)},
                         user="Author", session="a", browser="f" * 32)
    names = ["Ada", "Ben", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal"]
    victim = "Dee"
    script = WRITER.format(root=str(ROOT), db=str(db))
    procs = {name: subprocess.Popen(
        [sys.executable, "-c", script, name, f"{i:032x}", "100000" if name == victim else "25"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i, name in enumerate(names, start=1)}
    acked: dict[str, list[str]] = {n: [] for n in names}
    # Kill the victim once it has acknowledged 10 attempts: it is in its write loop, so the
    # kill lands inside or between transactions.
    deadline = time.time() + 120
    while sum(line.startswith("A") for line in acked[victim]) < 10:
        line = procs[victim].stdout.readline()
        assert line and time.time() < deadline, procs[victim].stderr.read()
        acked[victim].append(line.strip())
    os.kill(procs[victim].pid, signal.SIGKILL)
    for name, proc in procs.items():
        if name == victim:
            # Not communicate(): it reads the raw pipe, skipping the lines readline() above
            # already pulled into the file object's buffer (acknowledged writes the test would
            # then miss). read() drains that buffer first, then the pipe to EOF.
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.wait(timeout=300)
        else:
            out, err = proc.communicate(timeout=300)
        acked[name] += out.split("\n")
        if name == victim:
            assert proc.returncode == -signal.SIGKILL
        else:
            assert proc.returncode == 0, err
    acked = {n: [line for line in lines if line] for n, lines in acked.items()}

    with BeatStore(db) as s:
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        attempts = {a.id: a for a in s.attempts()}
        validations = {v.id: v for v in s.validations()}
        for name, lines in acked.items():
            for line in lines:
                kind, rid, *question = line.split(" ", 2)
                if kind == "A":
                    a = attempts[int(rid)]
                    assert (a.question, a.user) == (question[0], name)
                    assert [(m.model, m.answer) for m in a.models] == [("m1", "granite"), ("m2", "")]
                else:
                    assert validations[int(rid)].validator == name
            mine = [a for a in attempts.values() if a.user == name]
            n_acked = sum(line.startswith("A") for line in lines)
            if name == victim:  # at most the one write it did not live to acknowledge
                assert n_acked >= 10 and n_acked <= len(mine) <= n_acked + 1
            else:
                assert len(mine) == n_acked == 25
        assert all(len(a.models) == 2 for a in attempts.values() if a.id != 1)  # none half-written
        assert len(attempts) == 1 + sum(len([a for a in attempts.values() if a.user == n])
                                        for n in names)
        assert sorted(v.validator for v in validations.values()) == sorted(names)
        assert s.attempt(1).validations == 8
        s.record_attempt(LIGHT, "Still writable?", DATE, {"m": None}, user="Z", session="z")
