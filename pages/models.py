"""Models: what each registered model is and how well it measured, from its model card.

The registry (models.toml) says where each model comes from and whether it is installed; each
shipped model's card (written by core.training / core.models.ship, figures by ``core.models.evaluate --card``)
says what it was trained from and on, and what it scored on every data set it was evaluated on.
Nothing is computed here: the page reads the cards (core.models.cards) and shows them side by side,
and the engine cache's own account of the models this server holds now (components/model_memory.py).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components.export import csv_download, file_stem, json_download
from components.frame import page_frame
from components.model_memory import card_memory_mb, loaded_now
from components.text import md_escape
from core.metrics import METRICS
from core.models import cards as model_cards
from core.models import leaderboard
from core.models.cards import render_card_markdown
from core.qa import registry

page_frame()
st.title("Models")
st.caption("Every model in the registry (models.toml): where it loads from, whether it is installed, and "
           "the figures its model card holds, measured with `python -m core.models.evaluate --card` on the "
           "evaluation sets. Shipped models were trained by this project from encoders that PyPI "
           "packages carry; a hub model needs internet on its first load.")

try:
    entries = registry.load_registry()
except registry.ModelLoadError as e:
    st.error(f"The model registry cannot be read: {md_escape(e)}")
    st.stop()


def _escaped(value, keys: bool = False):
    """``value`` with every string in it Markdown-escaped (and dict keys too when ``keys``: only
    where the renderer prints them); numbers untouched."""
    if isinstance(value, str):
        return md_escape(value)
    if isinstance(value, dict):
        return {(md_escape(k) if keys and isinstance(k, str) else k): _escaped(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v, keys) for v in value]
    return value


def _escaped_card(card: dict) -> dict:
    """The card with its text escaped; the training and adapter sections print their keys."""
    out = _escaped(card)
    for section in ("training", "adapter"):
        if isinstance(card.get(section), dict):
            out[section] = _escaped(card[section], keys=True)
    return out


def _card(entry) -> dict | None:
    try:
        return entry.model_card()
    except (OSError, ValueError) as e:  # a malformed card is reported, the rest still shows
        st.warning(md_escape(f"{entry.name}: its model card cannot be read ({e})."))
        return None


cards = {m.name: _card(m) for m in entries}
status = {m.name: m.status() for m in entries}
ticked = set(registry.default_choice([m for m in entries if m.is_installed()]))
MISSING = "—"   # a figure the card does not hold


def _shown(table: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The table as the page shows it, and its column settings: figures to one decimal and right-
    aligned, a missing value as a dash (a dataframe draws a missing number as "None" whatever its
    formatting says, so the cells are text here; the CSV downloads keep the numbers)."""
    out, config = table.copy(), {}
    for c in table.columns:
        numeric = pd.api.types.is_numeric_dtype(table[c])
        out[c] = [MISSING if v is None or (isinstance(v, float) and pd.isna(v))
                  else (f"{v:.1f}" if numeric else str(v)) for v in table[c]]
        if numeric:
            config[c] = st.column_config.TextColumn(alignment="right")
    return out, config


# ------------------------------------------------------------------------------------- leaderboard
st.subheader("Which model for a language?")
langs = leaderboard.languages_of(entries, cards)
if langs:
    from core.translate.languages import language_name

    best = pd.DataFrame(leaderboard.best_per_language(entries, cards, langs))
    st.caption("Best per language: the model trained for it with the best XQuAD F1 in it, and the models "
               "the pickers tick for an item in that language (best measured F1, one per base encoder, "
               "within Ask's 0.5 s budget).")
    st.table(_shown(best)[0].style.hide(axis="index"))   # a static table wraps its cells: readable in a narrow window
    lang = st.selectbox("Language", langs, format_func=lambda c: f"{language_name(c)} ({c})", key="models_lang")
    ticked_here = registry.models_for_language(lang, [m for m in entries if m.is_installed()])
    board = pd.DataFrame(leaderboard.language_rows(entries, cards, lang, ticked_here))
    shown_board, board_config = _shown(board)
    st.dataframe(shown_board, hide_index=True, width="stretch",
                 column_config=board_config | {"model": st.column_config.TextColumn(pinned=True)})
    st.caption(md_escape(
        f"One row per model trained for {language_name(lang)} or measured in it, best first. "
        "ms / question: on this project's 2-core CPU with the model's default backend (the card's backend "
        "comparison, else its CPU evaluation); — where the card measured it on a GPU only or not at all. "
        + ("NoiseQA keyboard F1: XQuAD-en's questions with keyboard typos; behaviour tests failed: share "
           "of the English capability tests failed (Behaviour tests page). " if lang == "en" else "")
        + ("CMRC 2018 dev: the Chinese reading-comprehension set, character-level scorer. " if lang == "zh" else "")))
    csv_download(board, file_stem("models", lang), key="models_lang_csv", label=f"CSV ({language_name(lang)})")

# ------------------------------------------------------------------------------------- registry
st.subheader("Registry")
registry_table = pd.DataFrame([{
    "model": m.name,
    "languages": ", ".join(m.languages),
    "status": status[m.name],
    "source": m.shown_source,   # a folder on the server by its name (QAX_SHOW_PATHS)
    "base package": ((cards[m.name] or {}).get("base") or {}).get("package", ""),
    "ticked by default": m.name in ticked,   # as the model pickers choose
    "memory MB": card_memory_mb(m),   # its card's measured resident size on its default backend
    "description": m.description,
} for m in entries])
st.dataframe(registry_table, hide_index=True, width="stretch")
st.caption("memory MB: what the model holds in memory once loaded on its default backend, as its card "
           "measured it (`python benchmarks/model_memory.py --card`); — where the card has no such figure.")
csv_download(registry_table, "models_registry", key="models_registry_csv")

# ------------------------------------------------------------------------------------- measured
st.subheader("Measured")
rows = model_cards.evaluation_rows(cards)
if not rows:
    st.info("No model card holds measured figures yet: run "
            "`python -m core.models.evaluate --model NAME --dataset xquad/xquad.en --card`.")
else:
    metric = st.radio("Metric", list(model_cards.METRICS), format_func=model_cards.METRICS.get,
                      horizontal=True, key="models_metric")
    matrix = model_cards.evaluation_matrix(rows, metric)
    # models as rows: a narrow window scrolls across data sets, never across the model names
    shown_matrix, matrix_config = _shown(matrix.T)
    st.dataframe(shown_matrix, width="stretch", column_config=matrix_config)
    st.caption("—: the model was not evaluated on that data set. NoiseQA's synthetic sets are XQuAD-en's "
               "questions with keyboard, ASR and MT noise; the Chinese scores use the character-level "
               "scorer. Latency is as measured, on the CPU and thread count each card records "
               "(see the full table).")
    tidy = pd.DataFrame(rows, columns=list(model_cards.FIELDS))
    with st.expander("Full table (one row per model and data set)"):
        st.dataframe(tidy, hide_index=True, width="stretch")
    c1, c2, c3 = st.columns(3)
    with c1:
        csv_download(matrix.T.reset_index(names="model"), file_stem("models", metric), key="models_matrix_csv",
                     label=f"CSV ({model_cards.METRICS[metric]} matrix)")
    with c2:
        csv_download(tidy, "models_evaluations", key="models_tidy_csv", label="CSV (full table)")
    with c3:
        json_download(rows, "models_evaluations", key="models_tidy_json", label="JSON (full table)")

# Where each metric comes from (as evaluate's metric cards cite theirs): the declarations, not prose here
with st.expander("Metrics: what each measures, and its sources"):
    metric_sources = pd.DataFrame([m.source for m in METRICS.values()])
    st.dataframe(metric_sources, hide_index=True, width="stretch")
    csv_download(metric_sources, "metrics_sources", key="models_metrics_csv", label="CSV (metrics and sources)")

# ------------------------------------------------------------------------------------- capabilities
st.subheader("Capabilities (behaviour tests)")
cap_rows = model_cards.capability_rows(cards)
if not cap_rows:
    st.info("No model card holds capability figures yet: run `python -m core.behaviour "
            "assets/behaviour/capabilities_en.toml --model NAME --card`.")
else:
    cap_files = list(dict.fromkeys(r["file"] for r in cap_rows))
    cap_file = st.selectbox("Behaviour file", cap_files, key="models_cap_file") if len(cap_files) > 1 else cap_files[0]
    cap_matrix = model_cards.capability_matrix(cap_rows, cap_file)
    shown_caps, caps_config = _shown(cap_matrix.T)
    st.dataframe(shown_caps, width="stretch", column_config=caps_config)
    st.caption(md_escape(f"Failure rate in % per family of minimum-functionality tests ({cap_file}; lower is "
                         "better), as written by `python -m core.behaviour FILE --model NAME --card`. —: "
                         "the model was not run on this file. Run the file on the Behaviour tests page to "
                         "see the failing cases."))
    c1, c2 = st.columns(2)
    with c1:
        csv_download(cap_matrix.reset_index(names="family"), "models_capabilities", key="models_cap_csv",
                     label="CSV (failure-rate matrix)")
    with c2:
        json_download(cap_rows, "models_capabilities", key="models_cap_json", label="JSON (full table)")

# ------------------------------------------------------------------------------------- cards
st.subheader("Model cards")
for m in entries:
    card = cards[m.name]
    with st.expander(md_escape(f"{m.name}: {status[m.name]}")):
        if card is None:
            st.markdown(f"No model card. Source: {md_escape(m.shown_source)}.")
            continue
        # A card is data (a user's model folder may bring its own): its text is escaped before the
        # renderer lays it out as Markdown, so it cannot add an image or a link.
        try:
            st.markdown(render_card_markdown(_escaped_card(card)))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            st.warning(md_escape(f"{m.name}: the model card is not in the expected form ({e!r}); its JSON is below."))
        json_download(card, file_stem(m.name, "model_card"), key=f"models_card_{m.name}", label="model_card.json")

# ------------------------------------------------------------------------------------- loaded now
loaded_now()
