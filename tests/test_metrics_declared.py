"""Every metric is declared once (core.metrics.declared) and the app's labels come from there."""
import pytest

from core.metrics import METRICS, Metric
from core.models import cards
from core.render import heatmap


def test_each_metric_declares_label_direction_unit_and_description():
    assert set(METRICS) == {"em", "f1", "cer", "wer", "bleu", "dpr", "pct_change", "penalty"}
    assert {n: m.better for n, m in METRICS.items()} == {
        "em": "higher", "f1": "higher", "bleu": "higher", "cer": "lower", "wer": "lower", "dpr": "lower",
        "penalty": "lower", "pct_change": "zero"}
    assert all(m.description and m.label and m.unit for m in METRICS.values())
    # SEEDS.md §4: a rise of 5% costs a penalty like a drop of 5%, so "better" is closer to 0
    assert METRICS["pct_change"].is_better(-1.0, 5.0) and not METRICS["pct_change"].is_better(-5.0, 5.0)
    assert METRICS["f1"].help.endswith("(%; higher is better)")


def test_a_metric_with_an_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="better must be one of higher, lower, zero"):
        Metric("x", "X", "up", "%", "x")


def test_heatmap_and_model_cards_take_their_labels_from_the_declarations():
    assert heatmap.METRICS == {"f1": METRICS["f1"].label, "em": METRICS["em"].label} == {"f1": "F1", "em": "EM"}
    assert cards.METRICS["exact_match"] == "EM" and cards.METRICS["f1"] == "F1"


def test_each_metric_cites_its_paper_and_names_its_implementation():
    """As Hugging Face evaluate's metrics carry _CITATION and reference_urls: SQuAD's EM/F1 cite
    Rajpurkar et al. 2016 and the official script, DPR DuReader-robust, BLEU Papineni and sacreBLEU."""
    assert all(m.citation and m.reference for m in METRICS.values())
    for name in ("em", "f1"):
        assert "SQuAD: 100,000+ Questions for Machine Comprehension of Text" in METRICS[name].citation
        assert METRICS[name].reference.startswith("https://rajpurkar.github.io/SQuAD-explorer/")
    assert METRICS["dpr"].citation.startswith('Tang et al. (2021), "DuReader_robust')
    assert METRICS["dpr"].reference.startswith("https://aclanthology.org/2021.acl-short.120")
    assert "Papineni" in METRICS["bleu"].citation and "Post (2018)" in METRICS["bleu"].citation
    assert {METRICS[n].reference for n in ("cer", "wer")} == {"https://github.com/jitsi/jiwer"}
    assert all("Satheesh et al. (2024)" in METRICS[n].citation for n in ("pct_change", "penalty"))
    assert METRICS["penalty"].source == {
        "metric": "penalty", "better": "lower is better", "unit": "points",
        "description": METRICS["penalty"].description, "citation": METRICS["penalty"].citation,
        "reference": "SEEDS.md §4 (the band table); core/metrics/penalty.py"}
