"""Offline lexical sources for word substitution: WordNet synonyms, inflection, a masked LM.

* :class:`WordNet` reads Princeton WordNet 3.0 database files (``index.<pos>`` / ``data.<pos>``)
  directly - Debian's ``wordnet-base`` package installs them in ``/usr/share/wordnet``
  (``apt-get install wordnet-base``); ``QAX_WORDNET_DIR`` points elsewhere. No PyPI package
  ships WordNet's data (NLTK downloads it at run time, which fails offline), hence this reader.
  The format is documented in ``man 5 wndb``.
* :func:`inflect_like` re-inflects a synonym's lemma into the original word's form with
  ``lemminflect`` (PyPI; its tables ship in the wheel): "founded" + "establish" -> "established".
* :class:`MaskedLMSource` asks a masked language model (transformers ``AutoModelForMaskedLM``,
  a local path or a hub id already in the local cache) for the word at a masked position and
  returns the top prediction that differs from the original (Satheesh et al. 2024, ReplaceRQ).

English only for WordNet/lemminflect; other languages need the masked-LM path.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_WORDNET_DIR = "/usr/share/wordnet"

# Universal POS -> WordNet part-of-speech file suffix.
UPOS_TO_WORDNET = {"NOUN": "noun", "VERB": "verb", "ADJ": "adj", "ADV": "adv"}
_UPOS_TO_LEMMINFLECT = {"NOUN": "NOUN", "VERB": "VERB", "ADJ": "ADJ", "ADV": "ADV", "AUX": "AUX"}


class LexiconUnavailable(RuntimeError):
    """The lexical resource is not installed; the message says how to install it."""


def wordnet_dir() -> Path:
    return Path(os.environ.get("QAX_WORDNET_DIR") or DEFAULT_WORDNET_DIR)


class WordNet:
    """Synonyms from the WordNet database files in ``root`` (lazy: each index file read on first use)."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else wordnet_dir()
        missing = [f for f in ("index.verb", "data.verb", "index.noun", "data.noun") if not (self.root / f).is_file()]
        if missing:
            raise LexiconUnavailable(
                f"WordNet database files {missing} not found in {self.root} "
                "(Debian: apt-get install wordnet-base; or set QAX_WORDNET_DIR)")
        self._index: dict[str, dict[str, list[int]]] = {}

    def _load_index(self, pos: str) -> dict[str, list[int]]:
        if pos not in self._index:
            index: dict[str, list[int]] = {}
            with open(self.root / f"index.{pos}", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith(" "):
                        continue  # the licence header lines start with two spaces
                    # lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
                    fields = line.split()
                    synset_cnt, p_cnt = int(fields[2]), int(fields[3])
                    offsets = fields[4 + p_cnt + 2:]
                    index[fields[0]] = [int(o) for o in offsets[:synset_cnt]]
            self._index[pos] = index
        return self._index[pos]

    @functools.lru_cache(maxsize=65536)
    def _synset_words(self, pos: str, offset: int) -> tuple[str, ...]:
        with open(self.root / f"data.{pos}", "rb") as fh:
            fh.seek(offset)
            line = fh.readline().decode("utf-8")
        # synset_offset lex_filenum ss_type w_cnt(hex) [word lex_id]...
        fields = line.split()
        count = int(fields[3], 16)
        words = fields[4:4 + 2 * count:2]
        # Adjectives may carry a syntactic marker such as "(a)" or "(p)".
        return tuple(re.sub(r"\(\w+\)$", "", w).replace("_", " ") for w in words)

    def synonyms(self, lemma: str, upos: str, max_senses: int | None = None) -> list[str]:
        """Synonyms of ``lemma`` as part of speech ``upos``, most frequent sense first, no duplicates.

        ``max_senses`` limits the synsets read to the lemma's first (most frequent, as WordNet
        orders them) senses: rare senses are where "balls" -> "testicles" come from. The lemma
        itself (any case) is excluded. Multi-word synonyms come with spaces ("set up").
        """
        pos = UPOS_TO_WORDNET.get(upos)
        if pos is None:
            return []
        key = lemma.lower().replace(" ", "_")
        seen, out = {lemma.lower()}, []
        for offset in self._load_index(pos).get(key, [])[:max_senses]:
            for word in self._synset_words(pos, offset):
                if word.lower() not in seen:
                    seen.add(word.lower())
                    out.append(word)
        return out


@functools.lru_cache(maxsize=1)
def default_wordnet() -> WordNet:
    """The WordNet at :func:`wordnet_dir` (raises LexiconUnavailable when not installed)."""
    return WordNet()


def wordnet_error() -> str | None:
    """Why WordNet is unavailable, or None when it loads."""
    try:
        default_wordnet()
    except LexiconUnavailable as exc:
        return str(exc)
    return None


# ------------------------------------------------------------------------------------ inflection


def lemma_of(word: str, upos: str) -> str:
    """The lemma of an English ``word`` with Universal POS ``upos`` (lemminflect; the word if unknown)."""
    from lemminflect import getLemma

    lemmas = getLemma(word.lower(), upos=_UPOS_TO_LEMMINFLECT.get(upos, "NOUN"))
    return lemmas[0] if lemmas else word.lower()


_PENN_TAGS = {"VERB": ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ"), "AUX": ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ"),
              "NOUN": ("NN", "NNS"), "ADJ": ("JJ", "JJR", "JJS"), "ADV": ("RB", "RBR", "RBS")}


def _form_tags(word: str, lemma: str, upos: str) -> list[str]:
    """The Penn tags under which ``lemma`` is spelled ``word`` (e.g. founded -> ["VBD", "VBN"])."""
    from lemminflect import getInflection

    # getAllInflections omits VBN when it equals VBD ("selected"), so ask tag by tag.
    return [tag for tag in _PENN_TAGS.get(upos, ())
            if word.lower() in getInflection(lemma, tag=tag, inflect_oov=False)]


def match_case(template: str, word: str) -> str:
    """``word`` cased like ``template``: all-caps, capitalised, or as given."""
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


_PERFECT_OR_PASSIVE = {"be", "am", "is", "are", "was", "were", "been", "being", "has", "have", "had",
                       "having", "'s", "'re", "'ve", "'d", "get", "got", "gets", "getting"}


def past_tag_hint(text_before: str) -> str:
    """VBN (participle) if one of the 3 words before the verb is a form of be/have/get, else VBD.

    Resolves forms that are both past tense and participle ("selected"), where the synonym's two
    forms may differ ("chose" / "chosen"): "were selected" -> VBN, "Who selected" -> VBD.
    """
    previous = re.findall(r"[\w']+", text_before.lower())[-3:]
    return "VBN" if any(w in _PERFECT_OR_PASSIVE for w in previous) else "VBD"


def inflect_like(original: str, synonym_lemma: str, upos: str, text_before: str = "") -> str | None:
    """``synonym_lemma`` in the same inflection as ``original`` (English), cased like it.

    For a multi-word synonym ("set up") the first word is inflected. ``text_before`` (the text
    preceding the word) decides between past tense and participle when the original's spelling is
    both (:func:`past_tag_hint`). None when the original's form cannot be identified or the synonym
    has no such form.
    """
    from lemminflect import getInflection

    lemma = lemma_of(original, upos)
    if original.lower() == lemma:
        tags = ["base"]
    else:
        tags = _form_tags(original, lemma, upos)
        if not tags:
            return None
        if "VBD" in tags and "VBN" in tags:
            tags = [past_tag_hint(text_before)]
    head, _, rest = synonym_lemma.partition(" ")
    if tags == ["base"]:
        form = head
    else:
        forms = getInflection(head, tag=tags[0], inflect_oov=False)
        if not forms:
            return None
        form = forms[0]
    return match_case(original, form + (" " + rest if rest else ""))


# ----------------------------------------------------------------------------------- masked LM


@dataclass
class MaskedLMSource:
    """Predict a replacement for one word with a masked language model.

    Build it from a model directory / cached hub id with :meth:`from_pretrained`, or from
    already-built ``model`` and ``tokenizer`` objects (tests use a tiny random BERT).
    """

    model: object
    tokenizer: object
    name: str = "masked-lm"
    top_k: int = 20

    @classmethod
    def from_pretrained(cls, name_or_path: str, top_k: int = 20) -> "MaskedLMSource":
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=True)
            model = AutoModelForMaskedLM.from_pretrained(name_or_path, local_files_only=True)
        except OSError as exc:
            raise LexiconUnavailable(
                f"masked LM {name_or_path!r} could not be loaded from local files ({exc}); give a local "
                "model directory (nothing is downloaded at run time)") from exc
        model.eval()
        return cls(model=model, tokenizer=tokenizer, name=name_or_path, top_k=top_k)

    def predict(self, text: str, start: int, end: int) -> list[str]:
        """Whole-word predictions for ``text[start:end]`` replaced by one mask token, best first."""
        import torch

        mask = self.tokenizer.mask_token
        if mask is None:
            raise LexiconUnavailable(f"{self.name}: the tokenizer has no mask token")
        masked = text[:start] + mask + text[end:]
        enc = self.tokenizer(masked, return_tensors="pt", truncation=True)
        positions = (enc["input_ids"][0] == self.tokenizer.mask_token_id).nonzero()
        if len(positions) != 1:
            return []
        with torch.no_grad():
            logits = self.model(**enc).logits[0, int(positions[0])]
        order = torch.argsort(logits, descending=True)[: max(self.top_k * 5, self.top_k)].tolist()
        words = []
        for token_id in order:
            piece = self.tokenizer.convert_ids_to_tokens(token_id)
            word = self.tokenizer.convert_tokens_to_string([piece]).strip()
            # Keep whole words only: a "##" continuation piece or a symbol is not a replacement word.
            if piece.startswith("##") or not word or not any(ch.isalpha() for ch in word):
                continue
            if token_id in self.tokenizer.all_special_ids:
                continue
            words.append(word)
            if len(words) >= self.top_k:
                break
        return words

    def replacement(self, text: str, start: int, end: int) -> str | None:
        """The top prediction that differs (case-insensitively) from ``text[start:end]``, or None."""
        original = text[start:end].lower()
        for word in self.predict(text, start, end):
            if word.lower() != original:
                return word
        return None


@functools.lru_cache(maxsize=4)
def masked_lm(name_or_path: str) -> MaskedLMSource:
    """A cached :class:`MaskedLMSource` (loading a model takes seconds)."""
    return MaskedLMSource.from_pretrained(name_or_path)


# ------------------------------------------------------------------------- ranked substitutes

MAX_SYNONYMS = 30   # synonyms scored per word (all senses, most frequent first); bounds encoder cost


@dataclass(frozen=True)
class Substitute:
    replacement: str    # inflected and cased like the original word
    lemma: str          # the WordNet lemma it came from
    sentence: str       # the text with the replacement in place
    similarity: float   # cosine to the original text (core.perturb.similarity)


@functools.lru_cache(maxsize=1)
def _english_frequencies():
    from spellchecker import SpellChecker

    return SpellChecker(language="en").word_frequency


def word_frequency(word: str) -> int:
    """How often ``word`` (lower-cased) occurs in pyspellchecker's English frequency list (0 if absent)."""
    return _english_frequencies()[word.lower()]


def wordnet_substitutes(text: str, start: int, end: int, upos: str, *, reference: str | None = None,
                        max_senses: int | None = None, min_frequency: int = 0,
                        wordnet: WordNet | None = None) -> list[Substitute]:
    """WordNet synonyms of ``text[start:end]`` (English, part of speech ``upos``), best in context first.

    Each synonym is inflected like the original word, put in its place, and the resulting sentence
    is scored by its sentence-encoder cosine to ``reference`` (default: ``text``): the sentence that
    keeps the meaning best ranks first (this is what makes the synonym *contextual*: the encoder
    sees the whole question). Synonyms that cannot be inflected like the original, that spell the
    same word, or with a word rarer than ``min_frequency`` in pyspellchecker's English frequency
    list (our filter against obscure synonyms: "sackfuls", "thespians") are skipped.
    ``max_senses`` is passed to :meth:`WordNet.synonyms`.
    """
    from core.perturb import similarity

    wordnet = wordnet or default_wordnet()
    word = text[start:end]
    lemma = lemma_of(word, upos)
    seen, candidates = {word.lower()}, []
    for synonym in wordnet.synonyms(lemma, upos, max_senses)[:MAX_SYNONYMS]:
        form = inflect_like(word, synonym, upos, text[:start])
        if form is None or form.lower() in seen:
            continue
        if min_frequency and any(word_frequency(w) < min_frequency for w in form.split()):
            continue
        seen.add(form.lower())
        candidates.append((form, synonym, text[:start] + form + text[end:]))
    if not candidates:
        return []
    scores = similarity.similarities(reference if reference is not None else text,
                                     [sentence for _, _, sentence in candidates])
    ranked = [Substitute(form, synonym, sentence, score)
              for (form, synonym, sentence), score in zip(candidates, scores)]
    # Stable sort: equal scores keep WordNet's sense-frequency order.
    return sorted(ranked, key=lambda s: -s.similarity)
