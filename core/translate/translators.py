"""Machine translation backends behind one small interface (used by back-translation perturbations).

Interface: a :class:`Translator` has ``available_pairs()`` -> set of ``(src, tgt)`` ISO 639-1
codes it covers, and ``translate(texts, src, tgt)`` -> one translation per text, in order.

Backends:
  * :class:`ApertiumTranslator` - the rule-based Apertium engine from Debian's packages
    (``apt-get install apertium apertium-eng-spa apertium-eng-cat``; more pairs are more
    ``apertium-*`` packages). Fully offline. With the packages in ``.ci/apt-packages.txt`` it
    covers English <-> Spanish / Catalan / Galician, and Esperanto / Basque -> English
    (``apertium-eo-en``, ``apertium-eu-en``; their reverse directions are not packaged: eo-en
    ships en->eo too, eu-en does not). NOT German or Chinese (Debian ships no such pair), so
    German -> English -> German (Satheesh et al. 2024) cannot run on this machine with it.
  * :class:`Seq2SeqTranslator` - a Hugging Face encoder-decoder model (``AutoModelForSeq2SeqLM``)
    that the USER supplies as a local folder (e.g. a downloaded opus-mt-de-en), for the pairs the
    user says it covers. No neural MT model ships its weights through a package registry
    (argostranslate packs, opus-mt, NLLB and Firefox's models all download at run time), so none
    is installed here; this backend is how German or Chinese can be translated offline at all.
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
from pathlib import Path

# The Debian packages with an Apertium pair to or from English (``.ci/apt-packages.txt``):
# spa and cat translate both ways; gl both ways; eo and eu only INTO English.
APERTIUM_PACKAGES = {"es": "apertium-eng-spa", "ca": "apertium-eng-cat", "gl": "apertium-en-gl",
                     "eo": "apertium-eo-en", "eu": "apertium-eu-en"}


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
    """The Apertium command-line engine (``apertium -u SRC-TGT``), one process per ``lines_per_call`` texts.

    Texts are sent one per line in Apertium's plain-text format, which keeps line breaks, so the
    i-th output line is the i-th translation. ``-u`` drops the ``*`` marks on unknown words (they
    are copied through unchanged instead).
    """

    name = "apertium"
    lines_per_call = 500

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
        # A bounded number of lines a process, so each call's timeout bounds a known amount of work
        # however many texts a caller sends (a training run sends thousands at once).
        mode, out = self._modes[(src, tgt)], []
        for start in range(0, len(texts), self.lines_per_call):
            out += self._call(mode, texts[start:start + self.lines_per_call])
        return out

    def _call(self, mode: str, texts: list[str]) -> list[str]:
        try:
            result = subprocess.run([self.binary, "-u", mode], input="\n".join(texts) + "\n",
                                    capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise TranslationError(f"apertium {mode} took more than {self.timeout_s:g} s for {len(texts)} "
                                   "lines") from None
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


class Seq2SeqTranslator(Translator):
    """A Hugging Face encoder-decoder translation model, loaded from a local folder (never a hub).

    ``model``: a folder holding a model ``AutoModelForSeq2SeqLM`` and ``AutoTokenizer`` load
    (``local_files_only``: nothing is downloaded), or an already-built model (then ``tokenizer``
    is required). ``pairs``: the ``(src, tgt)`` directions it translates, as the user states them
    (a Marian opus-mt model is one direction; nothing in its files says which).

    Optional, for the model families that need them:
      * ``prefixes``: text put before each source, per pair (T5: "translate English to German: ");
      * ``lang_codes``: ISO 639-1 -> the model's language token (NLLB "spa_Latn", M2M100 "__es__",
        mBART "es_XX"): sets ``tokenizer.src_lang`` and forces the target language token as the
        first generated token.

    Decoding is deterministic: beam search (``num_beams``, 1 = greedy) without sampling, in
    batches of ``batch_size`` under ``torch.inference_mode``; the output is the decoded text
    without special tokens, stripped.
    """

    def __init__(self, model, pairs, *, tokenizer=None, prefixes: Mapping[tuple[str, str], str] | None = None,
                 lang_codes: Mapping[str, str] | None = None, num_beams: int = 1, max_new_tokens: int = 256,
                 batch_size: int = 16, name: str | None = None) -> None:
        from pathlib import Path

        self.pairs = {tuple(p) for p in pairs}
        if not self.pairs or any(len(p) != 2 or p[0] == p[1] for p in self.pairs):
            raise TranslationError(f"pairs must be (src, tgt) tuples of two different languages, got {pairs!r}")
        if num_beams < 1 or max_new_tokens < 1 or batch_size < 1:
            raise ValueError("num_beams, max_new_tokens and batch_size must be at least 1")
        if isinstance(model, (str, Path)):
            folder = Path(model).expanduser()
            if not folder.is_dir():
                raise TranslationError(f"translation model folder {str(folder)!r} does not exist "
                                       "(give a local folder; models are never downloaded)")
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

            try:
                tokenizer = tokenizer or AutoTokenizer.from_pretrained(folder, local_files_only=True)
                model = AutoModelForSeq2SeqLM.from_pretrained(folder, local_files_only=True)
            except (OSError, ValueError, KeyError) as exc:
                raise TranslationError(f"cannot load a seq2seq translation model from {folder}: {exc}") from None
            self.name = name or f"seq2seq:{folder.name}"
        else:
            if tokenizer is None:
                raise TranslationError("a model object needs its tokenizer (tokenizer=...)")
            self.name = name or f"seq2seq:{type(model).__name__}"
        if not getattr(model.config, "is_encoder_decoder", False):
            raise TranslationError(f"{self.name} is not an encoder-decoder (seq2seq) model")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.prefixes = dict(prefixes or {})
        self.lang_codes = dict(lang_codes or {})
        self.num_beams, self.max_new_tokens, self.batch_size = num_beams, max_new_tokens, batch_size
        if self.lang_codes:
            missing = sorted({lang for pair in self.pairs for lang in pair} - set(self.lang_codes))
            if missing:
                raise TranslationError(f"lang_codes has no model language code for {', '.join(missing)}")

    def available_pairs(self) -> set[tuple[str, str]]:
        return set(self.pairs)

    def _generate_kwargs(self, tgt: str) -> dict:
        kwargs = {"num_beams": self.num_beams, "do_sample": False, "max_new_tokens": self.max_new_tokens}
        if self.lang_codes:
            token_id = self.tokenizer.convert_tokens_to_ids(self.lang_codes[tgt])
            if token_id is None or token_id == self.tokenizer.unk_token_id:
                raise TranslationError(f"the tokenizer has no language token {self.lang_codes[tgt]!r}")
            kwargs["forced_bos_token_id"] = token_id
        return kwargs

    def _translate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        import torch

        if self.lang_codes and hasattr(self.tokenizer, "src_lang"):
            self.tokenizer.src_lang = self.lang_codes[src]
        prefix = self.prefixes.get((src, tgt), "")
        kwargs = self._generate_kwargs(tgt)
        out: list[str] = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = [prefix + t for t in texts[i:i + self.batch_size]]
                enc = self.tokenizer(batch, return_tensors="pt", padding=True, truncation=True)
                ids = self.model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                          **kwargs)
                out += [t.strip() for t in self.tokenizer.batch_decode(ids, skip_special_tokens=True)]
        return out


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


def local_seq2seq_folders(roots: Iterable[str | Path], max_depth: int = 3) -> list[Path]:
    """Folders under ``roots`` (at most ``max_depth`` levels down) holding a Hugging Face
    encoder-decoder model: a ``config.json`` with ``"is_encoder_decoder": true``. The app offers
    these in a picker instead of taking a folder path typed in the browser (docs/SECURITY.md).

    >>> import json, tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for name, enc_dec in (("opus-es-en", True), ("bert-qa", False)):
    ...     (root / "mt" / name).mkdir(parents=True)
    ...     _ = (root / "mt" / name / "config.json").write_text(json.dumps({"is_encoder_decoder": enc_dec}))
    >>> [p.name for p in local_seq2seq_folders([root])]
    ['opus-es-en']
    """
    import json

    found: list[Path] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for depth in range(1, max_depth + 1):
            for config in sorted(root.glob("/".join(["*"] * depth) + "/config.json")):
                try:
                    is_seq2seq = json.loads(config.read_text(encoding="utf-8")).get("is_encoder_decoder") is True
                except (OSError, ValueError, AttributeError):
                    continue
                if is_seq2seq and config.parent.resolve() not in found:
                    found.append(config.parent.resolve())
    return found
