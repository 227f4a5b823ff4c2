"""Token attributions drawn over text (Ask's toggle) and "why did it change?" (Variants' expander).

Each token's background is its attribution (core.explain): orange for a token that raised the
chosen span's start + end logits, blue for one that lowered them, the tint scaled by the largest
absolute score of that text, so each model is read on its own scale. The tooltip carries the
token and its start / end scores. Every text is escaped (components.text.html_text).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from components.text import html_text
from core.explore.answers import extractive_only_note

POSITIVE, NEGATIVE = (230, 159, 0), (0, 114, 178)   # Okabe-Ito orange and blue


def _tint(score: float, scale: float) -> str:
    r, g, b = POSITIVE if score >= 0 else NEGATIVE
    alpha = 0.0 if scale <= 0 else min(1.0, abs(score) / scale) * 0.85
    return f"rgba({r},{g},{b},{alpha:.2f})"


def attribution_html(text: str, tokens: Sequence) -> str:
    """HTML of ``text`` with each token (``start``, ``end``, ``token``, ``score``, ``score_start``,
    ``score_end``: core.explain.TokenScore) tinted by its score; text between tokens plain.

    >>> from core.explain.integrated import TokenScore
    >>> html = attribution_html("a <b>", [TokenScore("<b>", "context", 2, 5, 1.0, 1.0)])
    >>> html.startswith('<div class="qax-attr">a <span style="background:rgba(230,159,0,0.85)')
    True
    >>> "&#60;b&#62;</span>" in html and "<b>" not in html
    True
    """
    scale = max((abs(t.score) for t in tokens), default=0.0)
    out, pos = [], 0
    for t in sorted(tokens, key=lambda t: t.start):
        if t.start < pos:
            continue
        out.append(html_text(text[pos:t.start]))
        tip = html_text(f"{t.token}: {t.score:+.3f} (start {t.score_start:+.3f}, end {t.score_end:+.3f})")
        out.append(f'<span style="background:{_tint(t.score, scale)};border-radius:3px" title="{tip}">'
                   f"{html_text(text[t.start:t.end])}</span>")
        pos = t.end
    out.append(html_text(text[pos:]))
    return '<div class="qax-attr">' + "".join(out) + "</div>"


def legend_html() -> str:
    return (f'<span style="background:{_tint(1, 1)};padding:0 .3rem">raises the span</span> '
            f'<span style="background:{_tint(-1, 1)};padding:0 .3rem">lowers it</span> '
            "<small>(integrated gradients of the span's start + end logits; tint relative to the "
            "largest score of each text)</small>")


def _generative(name: str, engine_for: Callable) -> bool:
    """An LLM reader has no span logits to attribute (a model that fails to load is left to the
    panel, which says why)."""
    try:
        return getattr(engine_for(name), "kind", "") == "generative"
    except Exception:
        return False


def _cached(key: tuple, make: Callable):
    import streamlit as st

    store = st.session_state.setdefault("explain_cache", {})
    if key not in store:
        if len(store) > 32:
            store.clear()
        store[key] = make()
    return store[key]


def attributions_panel(page: str, question: str, context: str, models: Sequence[str], engine_for: Callable) -> None:
    """Ask's toggle: per model, the question and context coloured by attribution."""
    import streamlit as st

    from core.explain import explain

    if not st.toggle("Colour tokens by attribution (why this span?)", key=f"{page}_attr_toggle",
                     help="Integrated gradients on each model's torch weights: seconds per MiniLM model on a CPU, "
                          "about a minute for an MPNet-base one."):
        return
    st.markdown(legend_html(), unsafe_allow_html=True)
    for name in models:
        if _generative(name, engine_for):
            st.caption(html_text(extractive_only_note([name], "Attributions")))
            continue
        try:
            with st.spinner(f"Attributing {name}…"):
                a = _cached((name, question, context), lambda: explain(engine_for(name), question, context))
        except Exception as e:   # one model's failure must not hide the others'
            st.error(html_text(f"{name}: {type(e).__name__}: {e}"))
            continue
        answer = a.answer.text if a.answer else "no answer"
        st.markdown(f"**{html_text(name)}** → {html_text(answer)}", unsafe_allow_html=True)
        st.markdown(attribution_html(question, a.part("question")), unsafe_allow_html=True)
        st.markdown(attribution_html(context, a.part("context")), unsafe_allow_html=True)
        err = a.integration_error()
        if err is not None:
            st.caption(f"Attributions sum to the score's change from the baseline within {100 * err:.1f} % "
                       f"({a.n_steps} integration steps).")


def why_changed_html(rows: Sequence) -> str:
    """An HTML table of aligned words (core.explain.AlignedWord): clean word, its score, the
    perturbed word, its score; changed rows in bold.

    >>> from core.explain import AlignedWord
    >>> html = why_changed_html([AlignedWord("What", 1.5, "Wh<t", -0.25)])
    >>> "<b>Wh&#60;t</b>" in html and "+1.500" in html and "-0.250" in html
    True
    """
    def cell(word: str, score: float | None, bold: bool) -> str:
        w = html_text(word) if word else "<i>—</i>"
        s = "" if score is None else f"{score:+.3f}"
        return f"<td>{'<b>' + w + '</b>' if bold and word else w}</td><td style='text-align:right'>{s}</td>"

    body = "".join(f"<tr>{cell(r.clean, r.clean_score, r.changed)}{cell(r.perturbed, r.perturbed_score, r.changed)}"
                   "</tr>" for r in rows)
    return ("<table><tr><th>clean</th><th>score</th><th>perturbed</th><th>score</th></tr>" + body + "</table>")


def why_changed_expander(page: str, models: Sequence[str], question: str, context: str, perturbed_question: str,
                         perturbed_context: str, edits, field: str, engine_for: Callable) -> None:
    """"Why did it change?" for models whose answer changed: clean and perturbed ``field`` aligned
    by ``edits`` (None: diffed from the texts), each word's attribution side by side, the answer's
    move, and a JSON export."""
    import json

    import streamlit as st

    from core.explain.pair import explain_change

    with st.expander("Why did it change?"):
        model = st.selectbox("Model", list(models), key=f"{page}_why_model")
        try:
            with st.spinner(f"Attributing {model}…"):
                change = _cached(("change", model, question, context, perturbed_question, perturbed_context),
                                 lambda: explain_change(engine_for(model), question, context, perturbed_question,
                                                        perturbed_context, edits, field))
        except Exception as e:   # a model not installed here, a pair the engine refuses: said, not raised
            st.error(html_text(f"{model}: {type(e).__name__}: {e}"))
            return
        st.markdown(f"Answer: {html_text(change.move)}", unsafe_allow_html=True)
        st.markdown(why_changed_html(change.rows), unsafe_allow_html=True)
        st.caption(f"Each {html_text(field)} word's attribution (integrated gradients, summed over its "
                   "tokens) to the span its model chose: clean on the left, perturbed on the right.")
        st.download_button("Export JSON", json.dumps({"model": model, **change.as_dict()}, ensure_ascii=False,
                                                     indent=1), "why_changed.json", "application/json",
                           key=f"{page}_why_json")


def why_changed_panel(page: str, example, row, models: Sequence[str], predictions: dict, i: int,
                      engine_for: Callable) -> None:
    """Variants' expander for a row whose answer changed (row 0 holds the original's answers)."""
    from core.metrics import predictions_differ

    changed = [m for m in models if row.field and not _generative(m, engine_for)
               and predictions_differ(predictions[m][0].text, predictions[m][i].text, example.lang)]
    if changed:
        why_changed_expander(page, changed, example.question, example.context, row.example.question,
                             row.example.context, row.edits, row.field, engine_for)
