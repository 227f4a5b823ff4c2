"""The Models page's answer to "which model for German?": one row per model for one language, and
the best model of every language, from the model cards (nothing is run here).

A row holds the model's headline figure in the language (XQuAD F1 in it; for Chinese also CMRC
2018 dev), its robustness and capability figures where measured (NoiseQA's synthetic keyboard set
and the English behaviour tests: English only), its CPU time per question with its default backend,
and its size on disk. A figure the card does not hold is None (the page shows "—").

>>> from core.qa.registry import ModelEntry
>>> a, b = ModelEntry("a", path="x"), ModelEntry("b", path="y", languages=("en", "de"))
>>> cards = {"a": {"evaluations": {"xquad/xquad.en": {"f1": 71.2}, "xquad/xquad.de": {"f1": 22.7}}},
...          "b": {"evaluations": {"xquad/xquad.de": {"f1": 66.2}}, "size_on_disk": "43.0 MB (43007708 bytes)"}}
>>> [(r["model"], r["trained for de"], r["XQuAD-de F1"], r["size"]) for r in language_rows([a, b], cards, "de")]
[('b', 'yes', 66.2, '43.0 MB'), ('a', 'no', 22.7, None)]
>>> [(r["language"], r["best model"], r["F1"]) for r in best_per_language([a, b], cards, ["en", "de"])]
[('English (en)', 'a', 71.2), ('German (de)', 'b', 66.2)]
"""
from __future__ import annotations

from core.qa.registry import ModelEntry, cpu_ms_per_question, models_for_language

__all__ = ["XQUAD_LANGS", "NOISE_SET", "CAPABILITY_FILE", "languages_of", "language_rows", "best_per_language"]

# XQuAD's languages (the cards' headline sets, one per language)
XQUAD_LANGS = ("en", "de", "zh", "es", "ar", "el", "hi", "ro", "ru", "th", "tr", "vi")
NOISE_SET = "noiseqa/Synthetic/xquad-keyboard-synthetic"
CAPABILITY_FILE = "assets/behaviour/capabilities_en.toml"
CMRC_DEV = "cmrc2018_dev"


def _f1(card: dict | None, key: str) -> float | None:
    ev = ((card or {}).get("evaluations") or {}).get(key)
    f1 = ev.get("f1") if isinstance(ev, dict) else None
    return float(f1) if isinstance(f1, (int, float)) else None


def _cmrc(card: dict | None) -> float | None:
    for key in ((card or {}).get("evaluations") or {}):
        if key.replace("\\", "/").rstrip("/").endswith(f"{CMRC_DEV}.json") or key.endswith(CMRC_DEV):
            return _f1(card, key)
    return None


def _failure_rate(card: dict | None) -> float | None:
    """The share of the English behaviour tests the model failed, in %, over all families."""
    fams = (((card or {}).get("capabilities") or {}).get(CAPABILITY_FILE) or {}).get("families") or {}
    n = sum(f.get("n", 0) for f in fams.values() if isinstance(f, dict))
    failed = sum(f.get("failed", 0) for f in fams.values() if isinstance(f, dict))
    return round(100.0 * failed / n, 1) if n else None


def _size(card: dict | None) -> str | None:
    size = (card or {}).get("size_on_disk")
    return size.split(" (")[0] if isinstance(size, str) and size else None


def languages_of(entries: list[ModelEntry], cards: dict[str, dict | None]) -> list[str]:
    """XQuAD languages some model is trained for or measured in, English first."""
    found = {lang for m in entries for lang in m.languages}
    found |= {lang for card in cards.values() for lang in XQUAD_LANGS if _f1(card, f"xquad/xquad.{lang}") is not None}
    return [lang for lang in XQUAD_LANGS if lang in found]


def language_rows(entries: list[ModelEntry], cards: dict[str, dict | None], lang: str,
                  ticked: list[str] | None = None) -> list[dict]:
    """One row per model trained for ``lang`` or measured in it, best XQuAD-``lang`` F1 first (a
    model trained for it before one that is not, at equal or missing figures)."""
    rows = []
    for m in entries:
        card = cards.get(m.name)
        f1 = _f1(card, f"xquad/xquad.{lang}")
        trained = lang in m.languages
        if not trained and f1 is None:
            continue
        row = {"model": m.name, f"trained for {lang}": "yes" if trained else "no", f"XQuAD-{lang} F1": f1}
        if lang == "zh":
            row["CMRC 2018 dev F1"] = _cmrc(card)
        if lang == "en":
            row["NoiseQA keyboard F1"] = _f1(card, NOISE_SET)
            row["behaviour tests failed %"] = _failure_rate(card)
        row["ms / question (CPU)"] = cpu_ms_per_question(m, lang) if m.is_installed() and card else None
        row["backend"] = m.default_backend() if m.is_installed() and card else None
        row["size"] = _size(card)
        if ticked is not None:
            row["ticked by default"] = "yes" if m.name in ticked else "no"
        rows.append(row)
    key = f"XQuAD-{lang} F1"
    return sorted(rows, key=lambda r: (r[key] is None, -(r[key] or 0.0), r[f"trained for {lang}"] != "yes"))


def best_per_language(entries: list[ModelEntry], cards: dict[str, dict | None], langs: list[str]) -> list[dict]:
    """Per language: the model trained for it with the best XQuAD F1 in it, and the models the
    pickers tick for an item in it (core.qa.registry.models_for_language)."""
    from core.translate.languages import language_name

    installed = [m for m in entries if m.is_installed()]
    out = []
    for lang in langs:
        scored = [(f1, m.name) for m in entries if lang in m.languages
                  and (f1 := _f1(cards.get(m.name), f"xquad/xquad.{lang}")) is not None]
        best = max(scored, key=lambda t: t[0]) if scored else None
        out.append({"language": f"{language_name(lang)} ({lang})", "best model": best[1] if best else None,
                    "F1": best[0] if best else None,
                    "ticked by default": ", ".join(models_for_language(lang, installed)) if installed else None})
    return out
