"""Token attributions drawn over text (Ask's button) and "why did it change?" (Variants' and
Heatmaps' expander).

Each token's background is its attribution (core.explain): orange for a token that raised the
chosen span's start + end logits, blue for one that lowered them, the tint scaled by the largest
absolute score of that text, so each model is read on its own scale. The tooltip carries the
token and its start / end scores. Every text is escaped (components.text.html_text).

An attribution is computed only when a person presses its button (never because a page or a
panel was drawn: Streamlit runs the code inside a closed expander), on a background thread
(core.explain.run.AttributionRun) that the page follows with a progress bar per model and a
Cancel. A session runs one at a time (a new request cancels the one before), and a watchdog
cancels the run of a session whose browser has gone (:func:`_watch`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from components.export import download
from components.text import html_text, md_escape, sentence
from core.explain import run as attr_run
from core.explore.answers import extractive_only_note

# What one model's attribution costs, measured (docs/results/attribution.md); the buttons' help says it.
COST_NOTE = ("Integrated gradients (16 steps) on each model's torch weights. Measured for minilm-squad-v2 on an "
             "XQuAD passage: about 14 CPU-seconds per text, which was about 1 minute on a 2-core server shared "
             "with 20 busy processes (the 50-step run it replaced: 78 CPU-seconds, 7 minutes there). An MPNet-base "
             "model does about 7 times the arithmetic per window. Cancel stops it; closing the browser stops it too.")
WATCH_PERIOD_S = 0.5   # how often the watchdog looks for runs whose browser session has gone
POLL_S = 0.5           # how often a running run's progress is redrawn
CACHE_ITEMS = 32       # finished attributions kept per session

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


def _watch() -> None:
    """Cancel, every :data:`WATCH_PERIOD_S`, the runs whose browser session is no longer active
    (Streamlit's ``Runtime.is_active_session``: the tab closed or lost its connection); the
    thread ends when no run is left."""
    global _watchdog
    from components import session_memory

    def loop() -> None:
        global _watchdog
        while True:
            time.sleep(WATCH_PERIOD_S)
            rt = session_memory.runtime()
            if rt is not None:
                attr_run.reap(rt.is_active_session)
            with _watch_lock:
                if not attr_run.running_runs():
                    _watchdog = None
                    return

    with _watch_lock:
        if _watchdog is None:
            _watchdog = threading.Thread(target=loop, name="qax-attribution-watchdog", daemon=True)
            _watchdog.start()


_watch_lock = threading.Lock()
_watchdog: threading.Thread | None = None


def _cache() -> dict:
    import streamlit as st

    return st.session_state.setdefault("explain_cache", {})


def _start(page: str, key: tuple, tasks: list) -> None:
    """Start a run of ``tasks`` for ``key`` as this session's one run (cancelling the one before)."""
    import streamlit as st

    from components import session_memory

    if not tasks:
        return
    previous = st.session_state.get("attr_active_run")
    if previous is not None and previous.running:
        previous.cancel("a newer attribution was asked for")
    try:
        run = attr_run.start(tasks, key=key, owner=session_memory.session_id())
    except attr_run.BudgetError as e:
        st.error(md_escape(f"{sentence(e)} Wait a few seconds for one to end."))
        return
    st.session_state["attr_active_run"] = run
    st.session_state[f"{page}_attr_run"] = run
    _watch()


def _follow(page: str, run, draw: Callable, shown: set) -> None:
    """The run's progress per model and Cancel while it runs (redrawn every :data:`POLL_S`), each
    model's result (``draw(name, result, seconds)``) as it comes unless ``shown`` already, and
    its failures and cancels."""
    import streamlit as st

    running_at_start = run.running

    @st.fragment(run_every=POLL_S if running_at_start else None)
    def panel() -> None:
        for mp in run.models:
            if mp.state == attr_run.DONE:
                if mp.model not in shown:
                    draw(mp.model, mp.result, mp.seconds)
            elif mp.state == attr_run.FAILED:
                st.error(html_text(f"{mp.model}: {mp.error}"))
            elif mp.state == attr_run.CANCELLED:
                why = f" ({run.cancel_reason})" if run.cancel_reason else ""
                st.caption(md_escape(f"{mp.model}: cancelled{why}."))
            elif run.running:
                phase = mp.phase or ("waits for the model before it" if mp.state == attr_run.WAITING else "starting")
                st.progress(mp.fraction, text=md_escape(f"Attributing {mp.model}: {phase} · {mp.seconds:.0f} s"))
        if run.running:
            st.button("Cancel", key=f"{page}_attr_cancel", on_click=run.cancel, args=("cancelled on the page",))
        elif running_at_start:
            st.rerun()   # the whole page, once: its results move to the cache and the polling stops

    panel()


def _asked(page: str, key: tuple, models: Sequence[str], label: str, help_text: str, tasks: Callable) -> tuple:
    """(this page's run for ``key`` or None, {model: (result, seconds)} computed before). Draws
    the start button while a model's result is missing and no run for ``key`` is going; a press
    starts one for the missing models (``tasks(missing)``: [(model, task)])."""
    import streamlit as st

    cache = _cache()
    run = st.session_state.get(f"{page}_attr_run")
    if run is not None and run.key != key:   # another text: that run is not this one's
        if run.running:
            run.cancel("the text changed")
        st.session_state.pop(f"{page}_attr_run", None)
        run = None
    if run is not None and not run.running:
        for mp in run.models:
            if mp.state == attr_run.DONE and (*key, mp.model) not in cache:
                if len(cache) >= CACHE_ITEMS:
                    cache.clear()
                cache[(*key, mp.model)] = (mp.result, mp.seconds)
    done = {m: cache[(*key, m)] for m in models if (*key, m) in cache}
    missing = [m for m in models if m not in done]
    if missing and (run is None or not run.running):
        if st.button(label, key=f"{page}_attr_go", help=help_text):
            _start(page, key, tasks(missing))
            run = st.session_state.get(f"{page}_attr_run")
    return run, done


def attributions_panel(page: str, question: str, context: str, models: Sequence[str], engine_for: Callable) -> None:
    """Ask's button: per model, the question and context coloured by attribution."""
    import streamlit as st

    from core.explain import explain

    def draw(name: str, a, seconds: float) -> None:
        answer = a.answer.text if a.answer else "no answer"
        st.markdown(f"**{html_text(name)}** → {html_text(answer)}", unsafe_allow_html=True)
        st.markdown(attribution_html(question, a.part("question")), unsafe_allow_html=True)
        st.markdown(attribution_html(context, a.part("context")), unsafe_allow_html=True)
        err = a.integration_error()
        if err is not None:
            st.caption(f"Attributions sum to the score's change from the baseline within {100 * err:.1f} % "
                       f"({a.n_steps} integration steps, {seconds:.1f} s).")

    def tasks(names: Sequence[str]) -> list:
        out = []
        for name in names:
            try:
                engine = engine_for(name)   # here, in the page's thread: the loaders read the session
            except Exception as e:   # a model not installed here: said, the others still run
                st.error(html_text(f"{name}: {type(e).__name__}: {e}"))
                continue
            if getattr(engine, "kind", "") == "generative":   # an LLM reader has no span logits to attribute
                st.caption(html_text(extractive_only_note([name], "Attributions")))
                continue
            out.append((name, attr_run.releasing(engine, lambda progress, engine=engine: explain(
                engine, question, context, progress=progress, **attr_run.explain_settings()))))
        return out

    # one model unless more are asked for: the cheapest (a MiniLM's attribution is seconds, an
    # MPNet-base model's seven times that), so the button answers in seconds by default
    by_cost = attr_run.cheapest_first(list(models), _torch_ms)
    from components import persist

    persist.keep(f"{page}_attr_models", by_cost, by_cost[:1])
    picked = st.multiselect("Models to attribute", by_cost, key=f"{page}_attr_models",
                            help="Each model's attribution runs on its torch weights, one model after the other; "
                                 "the cheapest is picked first.")
    models = [m for m in models if m in picked]
    key = ("ask", question, context)
    run, done = _asked(page, key, models, "Colour tokens by attribution (why this span?)", COST_NOTE, tasks)
    if not done and run is None:
        return
    st.markdown(legend_html(), unsafe_allow_html=True)
    for name in models:
        if name in done:
            draw(name, *done[name])
    if run is not None:
        _follow(page, run, draw, set(done))


def _torch_ms(name: str) -> float | None:
    from core.qa import registry

    try:
        return registry.torch_cpu_ms_per_question(registry.get_entry(name))
    except Exception:   # a hub model or one not in models.toml: cost unknown
        return None


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
    move, and a JSON export. Computed when the button inside the expander is pressed."""
    import json

    import streamlit as st

    from core.explain.pair import explain_change

    def draw(model: str, change, seconds: float) -> None:
        st.markdown(f"Answer: {html_text(change.move)}", unsafe_allow_html=True)
        st.markdown(why_changed_html(change.rows), unsafe_allow_html=True)
        st.caption(f"Each {html_text(field)} word's attribution (integrated gradients, summed over its "
                   f"tokens) to the span its model chose: clean on the left, perturbed on the right "
                   f"({seconds:.1f} s).")
        download("Export JSON", json.dumps({"model": model, **change.as_dict()}, ensure_ascii=False, indent=1),
                 "why_changed.json", "application/json", f"{page}_why_json")

    with st.expander("Why did it change?"):
        model = st.selectbox("Model", list(models), key=f"{page}_why_model")

        def tasks(names: Sequence[str]) -> list:
            try:
                engine = engine_for(model)   # here, in the page's thread: the loaders read the session
            except Exception as e:   # a model not installed here: said, not raised
                st.error(html_text(f"{model}: {type(e).__name__}: {e}"))
                return []
            return [(model, attr_run.releasing(engine, lambda progress: explain_change(
                engine, question, context, perturbed_question, perturbed_context, edits, field, progress=progress,
                **attr_run.explain_settings())))]

        key = ("change", model, question, context, perturbed_question, perturbed_context)
        run, done = _asked(page, key, [model], f"Explain the change ({model})",
                           COST_NOTE + " The clean and the perturbed text are each attributed: twice the time.",
                           tasks)
        if model in done:
            draw(model, *done[model])
        if run is not None:
            _follow(page, run, draw, set(done))


def _generative(name: str, engine_for: Callable) -> bool:
    """An LLM reader has no span logits to attribute. Read from models.toml, not from a loaded
    engine: deciding whether to draw a closed panel must not load a model (under load that kept a
    Heatmaps server busy for over a minute with nobody asking). A model not in models.toml (a hub
    id) is extractive."""
    from core.qa import registry

    try:
        return registry.get_entry(name).kind == "generative"
    except (registry.ModelLoadError, ValueError, OSError):
        return False


def why_changed_panel(page: str, example, row, models: Sequence[str], predictions: dict, i: int,
                      engine_for: Callable) -> None:
    """Variants' expander for a row whose answer changed (row 0 holds the original's answers)."""
    from core.metrics import predictions_differ

    changed = [m for m in models if row.field and not _generative(m, engine_for)
               and predictions_differ(predictions[m][0].text, predictions[m][i].text, example.lang)]
    if changed:
        why_changed_expander(page, changed, example.question, example.context, row.example.question,
                             row.example.context, row.edits, row.field, engine_for)
