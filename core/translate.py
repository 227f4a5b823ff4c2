"""Machine translation backends behind one small interface (used by back-translation perturbations).

Interface: a :class:`Translator` has ``available_pairs()`` -> set of ``(src, tgt)`` ISO 639-1
codes it covers, and ``translate(texts, src, tgt)`` -> one translation per text, in order.

Backends:
  * :class:`ApertiumTranslator` - the rule-based Apertium engine from Debian's packages
    (``apt-get install apertium apertium-eng-spa apertium-eng-cat``; more pairs are more
    ``apertium-*`` packages). Fully offline. It covers English <-> Spanish / Catalan / Galician /
    Basque / Esperanto, among others; NOT German or Chinese (Debian ships no such pair), so
    German -> English -> German (Satheesh et al. 2024) cannot run on this machine with it.
  * :class:`MappingTranslator` - a fixed dictionary of translations (tests, demos, or translations
    cached from an online system by the user); never guesses.

:func:`default_translator` returns the Apertium backend when the ``apertium`` binary is on PATH,
else None; callers turn that None into a clear "no offline MT installed" message.
"""
from __future__ import annotations

import abc
import functools
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["Translator", "TranslationError", "ApertiumTranslator", "MappingTranslator",
           "default_translator", "no_backend_reason"]


class TranslationError(RuntimeError):
    """A translation request that cannot be served: unsupported pair, backend failure."""


class Translator(abc.ABC):
    """Translate batches of plain-text strings between languages named by ISO 639-1 codes."""

    name: str = "translator"

    @abc.abstractmethod
    def available_pairs(self) -> set[tuple[str, str]]:
        """The ``(src, tgt)`` pairs this backend translates directly."""

    @abc.abstractmethod
    def _translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        """Translate ``texts`` (already validated: single-line strings, a supported pair)."""

    def supports(self, src: str, tgt: str) -> bool:
        return (src, tgt) in self.available_pairs()

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        """One translation per text, in order. Raises TranslationError for an unsupported pair."""
        if isinstance(texts, str):
            raise TypeError("translate() takes a sequence of strings, not a single string")
        if not self.supports(src, tgt):
            pairs = ", ".join(f"{a}->{b}" for a, b in sorted(self.available_pairs())) or "none"
            raise TranslationError(f"{self.name} cannot translate {src}->{tgt}; available pairs: {pairs}")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text {i} is {type(text).__name__}, not str")
        if not texts:
            return []
        # Line-oriented engines would split a text containing newlines; a question never needs them.
        flat = [" ".join(t.split()) for t in texts]
        out = self._translate(flat, src, tgt)
        if len(out) != len(flat):
            raise TranslationError(f"{self.name} returned {len(out)} translations for {len(flat)} texts")
        return out


# Apertium names languages with ISO 639-3 codes; the product uses ISO 639-1.
_ISO3_TO_ISO1 = {"eng": "en", "spa": "es", "cat": "ca", "glg": "gl", "eus": "eu", "epo": "eo",
                 "deu": "de", "fra": "fr", "ita": "it", "por": "pt", "ron": "ro", "rus": "ru",
                 "en": "en", "es": "es", "ca": "ca", "gl": "gl", "eu": "eu", "eo": "eo"}


class ApertiumTranslator(Translator):
    """The Apertium command-line engine (``apertium -u SRC-TGT``), one process per batch.

    Texts are sent one per line in Apertium's plain-text format, which keeps line breaks, so the
    i-th output line is the i-th translation. ``-u`` drops the ``*`` marks on unknown words (they
    are copied through unchanged instead).
    """

    name = "apertium"

    def __init__(self, binary: str = "apertium", timeout_s: float = 120.0) -> None:
        path = shutil.which(binary)
        if path is None:
            raise TranslationError(f"the Apertium binary {binary!r} is not on PATH "
                                   "(Debian: apt-get install apertium apertium-eng-spa)")
        self.binary = path
        self.timeout_s = timeout_s

    @functools.cached_property
    def _modes(self) -> dict[tuple[str, str], str]:
        """(src, tgt) -> Apertium mode name, from ``apertium -l`` (plain modes only, no variants)."""
        result = subprocess.run([self.binary, "-l"], capture_output=True, text=True, timeout=30)
        modes: dict[tuple[str, str], str] = {}
        for line in result.stdout.split():
            parts = line.strip().split("-")
            if len(parts) != 2 or "_" in line:
                continue  # variants such as eng-cat_valencia or spa-eng_US
            src, tgt = (_ISO3_TO_ISO1.get(p) for p in parts)
            if src and tgt:
                modes.setdefault((src, tgt), line.strip())
        return modes

    def available_pairs(self) -> set[tuple[str, str]]:
        return set(self._modes)

    def _translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        mode = self._modes[(src, tgt)]
        result = subprocess.run([self.binary, "-u", mode], input="\n".join(texts) + "\n",
                                capture_output=True, text=True, timeout=self.timeout_s)
        if result.returncode != 0:
            raise TranslationError(f"apertium {mode} failed ({result.returncode}): {result.stderr.strip()[:300]}")
        lines = result.stdout.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [line.strip() for line in lines]


class MappingTranslator(Translator):
    """Translations looked up in a fixed table ``{(src, tgt): {text: translation}}``.

    An unknown text raises TranslationError (a table never invents a translation).
    """

    name = "mapping"

    def __init__(self, table: Mapping[tuple[str, str], Mapping[str, str]]) -> None:
        self.table = {pair: dict(entries) for pair, entries in table.items()}

    def available_pairs(self) -> set[tuple[str, str]]:
        return set(self.table)

    def _translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        entries = self.table[(src, tgt)]
        missing = [t for t in texts if t not in entries]
        if missing:
            raise TranslationError(f"no {src}->{tgt} translation in the table for {missing[0]!r}")
        return [entries[t] for t in texts]


@functools.lru_cache(maxsize=1)
def default_translator() -> Translator | None:
    """The offline backend installed on this machine (Apertium), or None when there is none."""
    try:
        translator = ApertiumTranslator()
    except TranslationError:
        return None
    return translator if translator.available_pairs() else None


def no_backend_reason(pairs: Iterable[tuple[str, str]], translator: Translator | None) -> str | None:
    """None when ``translator`` covers every pair in ``pairs``, else a sentence saying what is missing."""
    if translator is None:
        return ("no offline machine-translation backend is installed (Debian: apt-get install "
                "apertium apertium-eng-spa)")
    missing = [f"{a}->{b}" for a, b in pairs if not translator.supports(a, b)]
    if missing:
        have = ", ".join(f"{a}->{b}" for a, b in sorted(translator.available_pairs())) or "none"
        return f"{translator.name} has no {', '.join(missing)} pair (available: {have})"
    return None
