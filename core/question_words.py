"""Which question word a question asks with: its wh-class, in English, German, Spanish, Russian and
Chinese.

One table for the two places that group questions by it: the sweeps' "question word" slice
(:mod:`core.sweeps.analysis.slices`) and Beat the AI's statistics of a collected set
(:mod:`core.collect.beat_stats`, which folds "how many/much" into "how", as Bartolo et al. count).

The earliest question word in the question decides; at one position the longer phrase wins, so
"how many" is not "how" and 什么时候 ("when") is not the 什么 ("what") inside it. English and German
words match as whole words ("was" asks "what" only in German); Chinese ones inside the unspaced text.
"""
from __future__ import annotations

import re

__all__ = ["WH_CLASSES", "LANGUAGES", "wh_class"]

WH_CLASSES = ("what", "which", "who", "when", "where", "why", "how many/much", "how", "other")

_PHRASES: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (("how many", "how many/much"), ("how much", "how many/much"), ("what", "what"), ("which", "which"),
           ("who", "who"), ("whom", "who"), ("whose", "who"), ("when", "when"), ("where", "where"),
           ("why", "why"), ("how", "how")),
    "de": (("wie viele", "how many/much"), ("wie viel", "how many/much"), ("wieviele", "how many/much"),
           ("was", "what"), ("welche", "which"), ("welcher", "which"), ("welches", "which"),
           ("welchen", "which"), ("welchem", "which"), ("wer", "who"), ("wen", "who"), ("wem", "who"),
           ("wessen", "who"), ("wann", "when"), ("wo", "where"), ("wohin", "where"), ("woher", "where"),
           ("warum", "why"), ("weshalb", "why"), ("wieso", "why"), ("weswegen", "why"), ("wie", "how")),
    # XQuAD-es: only the accented forms ask ("que" is "that", "qué" is "what")
    "es": (("cuántos", "how many/much"), ("cuántas", "how many/much"), ("cuánto", "how many/much"),
           ("cuánta", "how many/much"), ("por qué", "why"), ("qué", "what"), ("cuál", "which"),
           ("cuáles", "which"), ("quién", "who"), ("quiénes", "who"), ("cuándo", "when"), ("dónde", "where"),
           ("adónde", "where"), ("cómo", "how")),
    # XQuAD-ru: the case forms of each word
    "ru": (("сколько", "how many/much"), ("что", "what"), ("чего", "what"), ("чему", "what"), ("чем", "what"),
           ("чём", "what"), ("какой", "which"), ("какая", "which"), ("какое", "which"), ("какие", "which"),
           ("какого", "which"), ("какому", "which"), ("каким", "which"), ("каком", "which"), ("какую", "which"),
           ("каких", "which"), ("какими", "which"), ("который", "which"), ("которая", "which"),
           ("которое", "which"), ("которые", "which"), ("кто", "who"), ("кого", "who"), ("кому", "who"),
           ("кем", "who"), ("ком", "who"), ("чей", "who"), ("чья", "who"), ("чьё", "who"), ("чьи", "who"),
           ("когда", "when"), ("где", "where"), ("куда", "where"), ("откуда", "where"), ("почему", "why"),
           ("зачем", "why"), ("как", "how")),
    # DuReader-robust, XQuAD-zh, CMRC
    "zh": (("什么时候", "when"), ("什么时间", "when"), ("何时", "when"), ("几时", "when"), ("哪一年", "when"),
           ("哪年", "when"), ("哪一天", "when"), ("哪天", "when"), ("几月", "when"), ("几号", "when"),
           ("哪里", "where"), ("哪儿", "where"), ("何处", "where"), ("何地", "where"), ("什么地方", "where"),
           ("在哪", "where"), ("为什么", "why"), ("为何", "why"), ("哪位", "who"), ("谁", "who"),
           ("什么", "what"), ("啥", "what"), ("哪个", "which"), ("哪些", "which"), ("哪一", "which"),
           ("哪种", "which"), ("哪", "which"), ("怎么", "how"), ("怎样", "how"), ("如何", "how"),
           ("多久", "how"), ("多大", "how"), ("多长", "how"), ("多高", "how"), ("多远", "how"),
           ("多少", "how many/much"), ("几", "how many/much")),
}
LANGUAGES = tuple(_PHRASES)
# Chinese words that hold a question word's character without asking ("几乎": almost).
_NOT_ASKING = ("几乎",)
_PATTERNS = {lang: tuple((re.compile(re.escape(p) if lang == "zh" else rf"(?<!\w){re.escape(p)}(?!\w)"), p, c)
                         for p, c in phrases) for lang, phrases in _PHRASES.items()}


def wh_class(question: str, lang: str) -> str | None:
    """The wh-class of ``question`` in language ``lang`` (one of :data:`WH_CLASSES`; "other" when it
    has no question word), or None for a language without a word list (:data:`LANGUAGES`).

    >>> wh_class("How many points?", "en"), wh_class("The bridge was built by whom?", "en"), wh_class("Name it.", "en")
    ('how many/much', 'who', 'other')
    >>> wh_class("Wie viele Tore fielen?", "de"), wh_class("Seit wann gab es sie?", "de"), wh_class("Ποιος;", "el")
    ('how many/much', 'when', None)
    >>> wh_class("¿Cuántos puntos cedió la defensa?", "es"), wh_class("¿Dijo que sí?", "es")
    ('how many/much', 'other')
    >>> wh_class("В каком году был построен мост?", "ru"), wh_class("Сколько очков?", "ru")
    ('which', 'how many/much')
    >>> [wh_class(q, "zh") for q in ("望川桥是什么时候建成的？", "他几乎赢了哪场比赛？", "卢克贡献了多少次擒抱？")]
    ['when', 'which', 'how many/much']
    """
    patterns = _PATTERNS.get(lang.split("-")[0].lower())
    if patterns is None:
        return None
    lowered = question.lower()
    for word in _NOT_ASKING:
        lowered = lowered.replace(word, " " * len(word))
    best: tuple[int, int, str] | None = None
    for pattern, phrase, cls in patterns:
        m = pattern.search(lowered)
        if m and (best is None or (m.start(), -len(phrase)) < best[:2]):
            best = (m.start(), -len(phrase), cls)
    return best[2] if best else "other"
