"""How far a noisy question is from the original: CER, WER (jiwer) and BLEU (sacreBLEU).

These are the three numbers NoiseQA (Ravichander et al. 2021, Table 3) reports per challenge set,
always with the ORIGINAL question as the reference and the NOISY question as the hypothesis.
Two forms: :func:`table3_summary` is the paper's (CER and WER on lower-cased text without
punctuation, BLEU uncased on the text as written: it reproduces the paper's synthetic keyboard
row, 4.1 / 23.9 / 52.7); :func:`noise_summary` is the raw figure, where case and punctuation
count (an ASR transcript loses every capital and "?" and looks far noisier than it is).

CER / WER: Levenshtein edits (substitutions + deletions + insertions) over characters / words,
divided by the number of reference characters / words. Computed by jiwer; the raw functions
(:func:`cer`, :func:`corpus_cer`, ...) use its default transforms: the ends of each string are
stripped; for WER the text is split on whitespace; for CER every character counts, spaces
included, and case and punctuation are NOT normalised (a dropped question mark is one character
edit). The corpus-level rate is total edits / total reference length (not the mean of per-pair
rates), as jiwer and the paper compute it.

Empty reference (our choice; the rate is undefined there, and jiwer 4 returns the raw insertion
count, which is not a rate): a pair whose reference is empty (after stripping) has rate 0.0 when
the hypothesis is empty too and 1.0 otherwise. At corpus level such pairs add their insertions to
the edits and nothing to the reference length; if the whole corpus has no reference characters
(words), the same 0.0 / 1.0 rule applies to the corpus.

BLEU: sacreBLEU corpus BLEU, case-insensitive (``lowercase=True``), default 13a tokenisation and
exponential smoothing, one reference per sentence, on the 0-100 scale. Empty strings are allowed
(they contribute no n-grams; an all-empty corpus scores 0.0). Note that BLEU counts n-grams up to
4, so a corpus whose sentences are all shorter than 4 tokens scores 0 even when identical.

>>> cer("where is it?", "were is it")  # "h" and "?" deleted: 2 edits over 12 characters
0.16666666666666666

Worked by hand: CER 3/21 (W->w, e->a, "?" deleted); WER 2/5 ("When"->"when", "end?"->"and");
BLEU: after lower-casing and 13a tokenisation the reference is "when did the war end ?" (6
tokens), the hypothesis 5 tokens with n-gram precisions 4/5, 3/4, 2/3, 1/2, geometric mean
0.2 ** 0.25 = 0.66874, brevity penalty exp(1 - 6/5) = 0.81873, BLEU = 54.752.

>>> noise_summary(["When did the war end?"], ["when did the war and"])
{'cer': 14.285714285714285, 'wer': 40.0, 'bleu': 54.75182535069452}
"""
from __future__ import annotations

from collections.abc import Sequence

import jiwer
from sacrebleu.metrics import BLEU

from core.metrics.declared import Metric

__all__ = ["cer", "wer", "corpus_cer", "corpus_wer", "bleu", "noise_summary", "asr_normalise",
           "corpus_wer_normalised", "table3_summary"]


# Where the noise measures come from (Hugging Face evaluate's wer, cer and sacrebleu cite these)
WER_CITATION = ('Morris, Maier and Green (2004), "From WER and RIL to MER and WIL: improved evaluation '
                'measures for connected speech recognition", Interspeech 2004')
JIWER = "https://github.com/jitsi/jiwer"
BLEU_CITATION = ('Papineni, Roukos, Ward and Zhu (2002), "BLEU: a Method for Automatic Evaluation of Machine '
                 'Translation", ACL 2002; Post (2018), "A Call for Clarity in Reporting BLEU Scores", WMT 2018')
DECLARED = (
    Metric("cer", "CER", "lower", "%", "character error rate of the noisy question against the original "
           "(jiwer: edits / characters of the original)", citation=WER_CITATION, reference=JIWER),
    Metric("wer", "WER", "lower", "%", "word error rate of the noisy question against the original "
           "(jiwer: edits / words of the original)", citation=WER_CITATION, reference=JIWER),
    Metric("bleu", "BLEU", "higher", "0-100", "corpus BLEU of the noisy questions against the originals "
           "(sacreBLEU)", citation=BLEU_CITATION, reference="https://github.com/mjpost/sacrebleu"),
)


def _check_pairs(references: Sequence[str], hypotheses: Sequence[str]) -> tuple[list[str], list[str]]:
    if isinstance(references, str) or isinstance(hypotheses, str):
        raise TypeError("references and hypotheses must be sequences of str, not a single str")
    references, hypotheses = list(references), list(hypotheses)
    if len(references) != len(hypotheses):
        raise ValueError(
            f"references and hypotheses differ in length ({len(references)} vs {len(hypotheses)})"
        )
    if not references:
        raise ValueError("no sentence pairs: need at least one (reference, hypothesis) pair")
    for i, (ref, hyp) in enumerate(zip(references, hypotheses)):
        if not isinstance(ref, str) or not isinstance(hyp, str):
            raise TypeError(
                f"pair {i} is not (str, str): ({type(ref).__name__}, {type(hyp).__name__})"
            )
    return references, hypotheses


def _edits_and_length(output) -> tuple[int, int]:
    """(S + D + I, reference length = S + D + hits) from a jiwer WordOutput / CharacterOutput."""
    edits = output.substitutions + output.deletions + output.insertions
    reference_length = output.substitutions + output.deletions + output.hits
    return edits, reference_length


def _rate(edits: int, reference_length: int) -> float:
    if reference_length == 0:
        # Empty reference: any edit is an insertion into nothing; call that completely wrong.
        return 0.0 if edits == 0 else 1.0
    return edits / reference_length


def _corpus_rate(references: Sequence[str], hypotheses: Sequence[str], process) -> float:
    references, hypotheses = _check_pairs(references, hypotheses)
    return _rate(*_edits_and_length(process(references, hypotheses)))


def corpus_cer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Character error rate over a corpus: total character edits / total reference characters.

    >>> corpus_cer(["abcd", "xy"], ["abd", "xyz"])  # 1 deletion + 1 insertion over 6 characters
    0.3333333333333333
    >>> corpus_cer(["", "ab"], ["x", "ab"]), corpus_cer([""], [""]), corpus_cer([" "], ["x"])
    (0.5, 0.0, 1.0)
    """
    return _corpus_rate(references, hypotheses, jiwer.process_characters)


def corpus_wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Word error rate over a corpus: total word edits / total reference words.

    >>> corpus_wer(["a b c", "d e"], ["a x c", "d e f"])  # 1 substitution + 1 insertion over 5 words
    0.4
    """
    return _corpus_rate(references, hypotheses, jiwer.process_words)


# ASR engines write lower-case words without punctuation (SEEDS.md §1): for "how many words did
# the recogniser get wrong" both sides are brought to that form first.
_ASR_FORM = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                           jiwer.Strip()])


def asr_normalise(text: str) -> str:
    """Lower-case, punctuation removed, spaces collapsed: the form ASR output takes.

    >>> asr_normalise("  Who won Super Bowl XLIX? ")
    'who won super bowl xlix'
    """
    return _ASR_FORM(text)


def corpus_wer_normalised(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Corpus WER after :func:`asr_normalise` on both sides: recognition errors only, where
    :func:`corpus_wer` also counts the case and punctuation an ASR engine never writes.

    >>> ref, hyp = ["Who led the Panthers in sacks?"], ["who led the panthers and sacks"]
    >>> corpus_wer(ref, hyp), corpus_wer_normalised(ref, hyp)  # Who, Panthers, in, sacks? vs in
    (0.6666666666666666, 0.16666666666666666)
    """
    references, hypotheses = _check_pairs(references, hypotheses)
    return corpus_wer([asr_normalise(r) for r in references], [asr_normalise(h) for h in hypotheses])


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate of one pair (a fraction; may exceed 1 when the hypothesis is longer).

    >>> cer("abc", "abc"), cer("abc", ""), cer("ab", "xyzw")
    (0.0, 1.0, 2.0)
    >>> cer("", ""), cer("", "abc")
    (0.0, 1.0)
    """
    return corpus_cer([reference], [hypothesis])


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of one pair (a fraction).

    >>> wer("what year did it end", "what year it ended")  # 1 deletion + 1 substitution over 5
    0.4
    >>> wer("", "  "), wer("", "hello")
    (0.0, 1.0)
    """
    return corpus_wer([reference], [hypothesis])


def bleu(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Corpus BLEU (0-100) of the hypotheses against one reference each; uncased, 13a tokens.

    >>> round(bleu(["Who wrote the Iliad?"], ["who wrote the iliad ?"]), 9)
    100.0
    >>> bleu([""], [""])
    0.0
    """
    references, hypotheses = _check_pairs(references, hypotheses)
    # A fresh scorer per call: BLEU objects cache reference statistics between calls.
    return BLEU(lowercase=True).corpus_score(hypotheses, [references]).score


def noise_summary(originals: Sequence[str], noisy: Sequence[str]) -> dict[str, float]:
    """The raw triple, in percent: corpus CER, corpus WER (case and punctuation counted), corpus
    BLEU (uncased). :func:`table3_summary` is the paper's Table 3 form.

    ``originals`` are the clean questions (the references), ``noisy`` the corrupted ones.

    >>> same = noise_summary(["Who wrote it?", "Where is Paris?"], ["Who wrote it?", "Where is Paris?"])
    >>> same["cer"], same["wer"], round(same["bleu"], 9)
    (0.0, 0.0, 100.0)
    >>> noise_summary(["a b"], ["a b", "c"])
    Traceback (most recent call last):
    ...
    ValueError: references and hypotheses differ in length (1 vs 2)
    """
    originals, noisy = _check_pairs(originals, noisy)
    return {
        "cer": 100.0 * corpus_cer(originals, noisy),
        "wer": 100.0 * corpus_wer(originals, noisy),
        "bleu": bleu(originals, noisy),
    }


def table3_summary(originals: Sequence[str], noisy: Sequence[str]) -> dict[str, float]:
    """NoiseQA's Table 3 as the paper computes it, in percent: corpus CER and WER on both sides
    lower-cased and without punctuation (:func:`asr_normalise`: the paper does not count case
    or punctuation), and corpus BLEU uncased on the text as written (sacreBLEU, 13a tokens,
    exactly :func:`bleu`). On NoiseQA's synthetic keyboard file against XQuAD-en this gives
    the paper's 4.1 / 23.9 / 52.7 (docs/results/noiseqa-table3.md). :func:`noise_summary` is the raw figure: case and
    punctuation counted.

    Worked by hand: "When did the war end?" -> "when did the war and": normalised, the
    reference is "when did the war end" (20 characters, 5 words) and one character and one word
    differ: CER 1/20 = 5.0, WER 1/5 = 20.0; BLEU as in the module docstring (54.75). The raw
    figures are 14.3 / 40.0 (case and "?" counted).

    >>> t = table3_summary(["When did the war end?"], ["when did the war and"])
    >>> round(t["cer"], 6), round(t["wer"], 6), round(t["bleu"], 2)
    (5.0, 20.0, 54.75)
    """
    originals, noisy = _check_pairs(originals, noisy)
    references = [asr_normalise(r) for r in originals]
    hypotheses = [asr_normalise(h) for h in noisy]
    return {
        "cer": 100.0 * corpus_cer(references, hypotheses),
        "wer": 100.0 * corpus_wer(references, hypotheses),
        "bleu": bleu(originals, noisy),
    }
