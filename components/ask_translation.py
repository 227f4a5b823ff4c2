"""Ask's question in another language than the passage: the question-language picker, the
translation into the passage's language (Apertium, and the administrator's own seq2seq models
when the server has any) and what the page shows about it (typed and asked side by side, or why
the question was not translated). The plan itself is core.explore.ask_input's.
"""
from __future__ import annotations

import streamlit as st

from components.state import current_data_dir
from components.text import md_escape
from core import config
from core.explore import ask_input
from core.langid import guess_language
from core.translate import languages, translators

QUESTION_LANGUAGES = [ask_input.AUTO, "en", "es", "ca", "gl", "eu", "eo", "de", "zh", "ar", "el", "hi", "ro",
                      "ru", "th", "tr", "vi"]


@st.cache_resource(show_spinner=False)
def _apertium():
    return translators.default_translator()


@st.cache_data(ttl=60, show_spinner=False)
def _seq2seq_folders(data: str) -> list:
    return translators.local_seq2seq_folders(config.read_roots(data or None))


@st.cache_resource(show_spinner="Loading the translation model…")
def _user_translator(folder: str, src: str, tgt: str):
    return translators.Seq2SeqTranslator(folder, [(src, tgt)])


def _lang_label(code: str) -> str:
    if code == ask_input.AUTO:
        return "Auto-detect"
    return f"{languages.language_name(code)} ({code})"


def question_language_picker() -> str:
    """The question's language (``ask_qlang``; :data:`ask_input.AUTO` guesses it)."""
    return st.selectbox("Question language", QUESTION_LANGUAGES, format_func=_lang_label, key="ask_qlang",
                        help="Auto-detect guesses from the script, then from function words (the, de, la, "
                             "was ...); choose the language if the guess is wrong. A question in another "
                             "language than the context is machine-translated first.")


def planned_question(question: str, qlang: str, lang: str, shown_in, mt_slot) -> ask_input.QuestionPlan:
    """``question`` (typed in ``qlang``) as it will be asked of a passage in ``lang``: translated
    when the languages differ. Draws the languages and both texts in ``shown_in``, and the picker of
    the server's own translation models (never a folder path typed by a visitor) in ``mt_slot``."""
    available = []
    user_model = st.session_state.get("ask_mt_model") or ""
    plan_lang = qlang if qlang != ask_input.AUTO else guess_language(question).code
    if user_model and plan_lang != lang:
        try:
            folder = config.confine(user_model, config.read_roots(current_data_dir()), "translation model")
            available.append(_user_translator(str(folder), plan_lang, lang))
        except (translators.TranslationError, config.ConfinementError) as e:
            shown_in.error(md_escape(e))
    available.append(_apertium())
    plan = ask_input.plan_question(question, qlang, lang, [t for t in available if t is not None],
                                   cache=st.session_state.setdefault("ask_mt_cache", {}))
    with shown_in:
        _show_plan(plan, lang)
    with mt_slot:
        if plan.lang != lang or qlang not in (ask_input.AUTO, "en"):
            _own_model_picker(plan.lang, lang)
        else:
            st.session_state.pop("ask_mt_model", None)
    return plan


def _show_plan(plan: ask_input.QuestionPlan, lang: str) -> None:
    if not plan.typed.strip():
        return
    if plan.lang != lang or (plan.guess is not None and plan.lang != "en"):
        how = f" — detected {plan.guess.explain()}" if plan.guess is not None else ""
        st.caption(md_escape(f"Question language: {languages.language_name(plan.lang)}{how}; "
                             f"context language: {languages.language_name(lang)}."))
    if plan.translated:
        t1, t2 = st.columns(2)
        t1.caption(f"Typed ({languages.language_name(plan.lang)})")
        t1.text(plan.typed)
        t2.caption(f"Asked ({languages.language_name(plan.target)}, translated by {plan.translator})")
        t2.text(plan.asked)
    elif plan.problem:
        st.warning(md_escape(plan.problem))


def _own_model_picker(src: str, tgt: str) -> None:
    folders = [str(p) for p in _seq2seq_folders(str(current_data_dir() or ""))]
    if not folders:
        st.session_state.pop("ask_mt_model", None)
        st.caption("A Hugging Face seq2seq translation model can answer here too: an administrator puts "
                   "its folder under the data directory or a folder named in QAX_EXTRA_ROOTS "
                   "(docs/SECURITY.md).")
        return
    if st.session_state.get("ask_mt_model") not in folders:
        st.session_state.pop("ask_mt_model", None)  # a folder that went away
    st.selectbox(f"Your own translation model (optional), translating "
                 f"{languages.language_name(src)} → {languages.language_name(tgt)}",
                 ["", *folders], key="ask_mt_model",
                 format_func=lambda f: config.shown_path(f) if f else "none (Apertium only)")
