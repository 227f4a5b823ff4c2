"""What the Ask page does with a spoken or a foreign-language question (logic only, no streamlit).

Speech: :func:`transcribe_all` runs each chosen ASR engine on one recording and reports, per
engine, the transcript, the time taken and why it could not run; :func:`wer_against` scores a
transcript against what the user meant to say. Both sides are normalised like ASR output
(lower case, no punctuation: :func:`core.speech.asr.normalise_transcript`) so that only
recognition errors count.

Translation: :func:`plan_question` decides how the typed (or transcribed) question reaches the
model: its language is the user's explicit choice, or guessed (:func:`core.langid.guess_language`:
script, then function words); when it differs from the context's language the question is
machine-translated into the context's language by the first translator that covers the pair
(Apertium from Debian, or a seq2seq model folder the user supplies). Where none does (German and
Chinese, here) the plan says so plainly and the question is asked as typed, which a multilingual
model may still answer.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.langid import LanguageGuess, guess_language
from core.metrics.text_distance import wer as word_error_rate
from core.speech import asr
from core.speech.audio import Audio, AudioError
from core.translate import languages
from core.translate.translators import TranslationError, Translator

AUTO = "auto"


@dataclass(frozen=True)
class EngineResult:
    """One engine's go at a recording: ``text`` (normalised transcript) or ``error`` (why not)."""

    engine: str
    label: str
    text: str | None
    raw: str = ""
    seconds: float | None = None
    rtf: float | None = None
    error: str | None = None


engine_problem = asr.engine_problem  # re-exported: the page asks it per engine


def transcribe_all(audio: Audio, engines: Sequence[str], language: str | None = None) -> list[EngineResult]:
    """Each engine's transcript of ``audio`` (in ``engines`` order); failures are reported, not raised."""
    out = []
    for name in engines:
        try:
            label = asr.get_engine(name).label
        except KeyError:
            label = name
        problem = engine_problem(name, language)
        if problem:
            out.append(EngineResult(name, label, None, error=problem))
            continue
        try:
            t = asr.get_engine(name).transcribe(audio.samples, audio.sample_rate, language=language)
        except (AudioError, asr.ASRError, ValueError) as exc:
            out.append(EngineResult(name, label, None, error=str(exc)))
            continue
        out.append(EngineResult(name, label, t.text, t.raw, t.seconds, t.rtf))
    return out


def wer_against(reference: str, transcript: str | None) -> float | None:
    """WER (a fraction) of ``transcript`` against ``reference``, both normalised; None when either is missing."""
    if transcript is None or not reference or not reference.strip():
        return None
    return word_error_rate(asr.normalise_transcript(reference), asr.normalise_transcript(transcript))


NOT_MEASURED = "—"   # a figure with nothing to measure it by (the table showed Python's "None")


def _figure(x: float | None, digits: int, scale: float = 1.0) -> str:
    return NOT_MEASURED if x is None else f"{scale * x:.{digits}f}"


def transcript_rows(engines: Sequence[str], results: Sequence[EngineResult], problems: Mapping[str, str | None],
                    reference: str) -> list[dict[str, str]]:
    """Ask's table of a take's transcripts: per engine its transcript, WER % against ``reference``
    (what the speaker meant to say), seconds and real-time factor, or "—" where there is none (no
    reference typed, an engine that could not run), and its problem.

    >>> ok = EngineResult("whisper-base", "Whisper", "when was it lit", seconds=0.5, rtf=0.25)
    >>> rows = transcript_rows(["whisper-base", "vosk"], [ok], {"whisper-base": None, "vosk": "not installed"}, "")
    >>> [(r["engine"], r["WER %"], r["seconds"], r["problem"]) for r in rows]
    [('whisper-base', '—', '0.50', ''), ('vosk', '—', '—', 'not installed')]
    >>> transcript_rows(["whisper-base"], [ok], {"whisper-base": None}, "When was it first lit?")[0]["WER %"]
    '20.0'
    """
    by_engine = {r.engine: r for r in results}
    rows = []
    for name in engines:
        r = by_engine.get(name)
        rows.append({"engine": name, "transcript": r.text if r and r.text is not None else "",
                     "WER %": _figure(wer_against(reference, r.text if r else None), 1, 100.0),
                     "seconds": _figure(r.seconds if r else None, 2), "RTF": _figure(r.rtf if r else None, 2),
                     "problem": (r.error if r is not None else problems.get(name)) or ""})
    return rows


@dataclass(frozen=True)
class QuestionPlan:
    """How a question reaches the model.

    ``typed``: what the user typed or said; ``lang``: its language; ``guess``: the detection when
    the language was not chosen; ``target``: the context's language; ``asked``: the text the model
    gets; ``translator``: the backend that translated (None: not translated); ``problem``: why a
    needed translation could not be done (the question is then asked as typed).
    """

    typed: str
    lang: str
    target: str
    asked: str
    guess: LanguageGuess | None = None
    translator: str | None = None
    problem: str | None = None

    @property
    def translated(self) -> bool:
        return self.translator is not None


def no_mt_message(src: str, tgt: str, translators: Sequence[Translator]) -> str:
    """The plain sentence the page shows when no installed backend translates ``src`` -> ``tgt``."""
    names = f"{languages.language_name(src)} → {languages.language_name(tgt)}"
    if src in ("de", "zh") or tgt in ("de", "zh"):
        why = ("Debian ships no Apertium pair for German or Chinese, and no neural translation model "
               "ships its weights through a package registry")
    elif not translators:
        why = "no translation backend is installed (Debian: apt-get install apertium apertium-eng-spa)"
    else:
        have = sorted({p for t in translators for p in t.available_pairs()})
        why = "the installed backends cover " + ", ".join(f"{a}→{b}" for a, b in have)
    return (f"No offline machine translation is installed for {names}: {why}. The question is asked as "
            "typed (a multilingual model may still answer it); to translate it, supply a local seq2seq "
            "translation model folder.")


def plan_question(text: str, chosen: str, target: str, translators: Sequence[Translator],
                  cache: dict | None = None) -> QuestionPlan:
    """Decide (and do) the translation of ``text`` for a context in ``target``.

    ``chosen``: a language code, or :data:`AUTO` to guess. ``translators``: tried in order; the
    first covering (lang, target) translates. ``cache``: an optional dict keyed by (translator,
    lang, target, text) so that reruns of a page do not translate the same text again.
    """
    guess = None
    if chosen == AUTO:
        guess = guess_language(text)
        lang = guess.code
    else:
        lang = chosen
    if lang == target or not text.strip():
        return QuestionPlan(text, lang, target, text, guess)
    translator = next((t for t in translators if t is not None and t.supports(lang, target)), None)
    if translator is None:
        return QuestionPlan(text, lang, target, text, guess,
                            problem=no_mt_message(lang, target, [t for t in translators if t is not None]))
    key = (translator.name, lang, target, text)
    if cache is not None and key in cache:
        asked = cache[key]
    else:
        try:
            [asked] = translator.translate([text], lang, target)
        except TranslationError as exc:
            return QuestionPlan(text, lang, target, text, guess, problem=f"Translation failed: {exc}")
        if cache is not None:
            cache[key] = asked
    return QuestionPlan(text, lang, target, asked, guess, translator.name)


__all__ = ["AUTO", "EngineResult", "engine_problem", "transcribe_all", "wer_against", "QuestionPlan",
           "plan_question", "no_mt_message"]
