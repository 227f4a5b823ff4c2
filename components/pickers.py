"""Pickers shared by the pages: a dataset (bundled demo, data directory, or upload) and models."""
from __future__ import annotations

import math
import random
import time

import streamlit as st

from components import loaders, persist, session_memory
from components.state import current_data_dir
from components.text import md_escape
from core import memory
from core.datasets import ON_AMBIGUOUS, ON_UNSCORABLE, DatasetError, load_squad
from core.io import safe_json
from core.qa import registry
from core.render.words import count

DEMO_LANGS = {"demo.en": "en", "demo.de": "de", "demo.zh": "zh"}
MAX_UPLOADS = 3  # parsed uploads kept per session: a 20 MB file is ~200 MB of Python objects


def evaluation_sets() -> dict[str, str]:
    """Data sets to read questions from: name -> path, the data directory's evaluation sets, then
    the bundled demo sets ('' as their path: :func:`load_set` loads them by language)."""
    d = current_data_dir()
    found = {info.name: str(info.path) for info in loaders.discovered(str(d)) if info.role == "eval"} if d else {}
    return found | {name: "" for name in DEMO_LANGS}


def load_set(name: str, path: str):
    """A data set of :func:`evaluation_sets` (cached per process), confined to the data
    directory (:func:`components.loaders.dataset`)."""
    if name in DEMO_LANGS:
        return loaders.demo(DEMO_LANGS[name])
    d = current_data_dir()
    if d is None:
        raise DatasetError(f"{name}: no data directory")
    return loaders.dataset(path, str(d), name)


def dataset_picker(key: str, roles=("eval", "challenge"), upload_box=None):
    """Choose a dataset; returns a Dataset or None. Errors are shown, never raised. ``upload_box``:
    a container to draw the upload expander in (Ask keeps it below the question)."""
    options = list(DEMO_LANGS)
    paths: dict[str, str] = {}
    d = current_data_dir()
    if d:
        for info in loaders.discovered(str(d)):
            if info.role in roles:
                options.append(info.name)
                paths[info.name] = str(info.path)
    uploaded = st.session_state["uploaded_datasets"]
    # Dropped (with the session's uploaded files) once the tab has been closed a while, even
    # though Streamlit keeps the closed session: see components/session_memory.py.
    session_memory.watch(uploaded)
    options += [f"upload:{n}" for n in uploaded]
    # A file uploaded in the last run is selected (its widget value is set before it is drawn).
    if (fresh := st.session_state.pop(f"{key}_dataset_next", None)) in options:
        persist.hand_over({f"{key}_dataset": fresh})
    persist.keep(f"{key}_dataset", options)
    choice = st.selectbox("Dataset", options, key=f"{key}_dataset",
                          help="The bundled demo set, files found in the data directory, or your uploads.")
    with (upload_box if upload_box is not None else st.container()):
        with st.expander("Upload a SQuAD-format JSON file"):
            _upload_box(key, uploaded)
    try:
        if choice in DEMO_LANGS:
            return loaders.demo(DEMO_LANGS[choice])
        if choice.startswith("upload:"):
            return uploaded[choice[len("upload:"):]]
        return loaders.dataset(paths[choice], str(d), choice)
    except (DatasetError, OSError) as e:
        st.error(md_escape(f"Could not read {choice}: {e}"))
        return None


def _upload_box(key: str, uploaded: dict) -> None:
    """The uploader: size limit, parse (nesting limit, schema), then the uploaded bytes freed.

    Once an upload is parsed (or refused), its bytes are removed from Streamlit's upload store
    and the uploader gets a new widget key (the old one would ask for the removed file): what
    stays is the parsed Dataset in this session's state only (never a process-wide cache).
    At most :data:`MAX_UPLOADS` datasets are kept per session, oldest dropped.
    """
    s = st.session_state
    gen_key, msg_key = f"{key}_upload_gen", f"{key}_upload_msg"
    gen = s.setdefault(gen_key, 0)
    try:
        limit = safe_json.max_upload_bytes()
    except ValueError as e:  # a malformed QAX_MAX_UPLOAD_MB is the admin's: say so, no uploads
        st.error(md_escape(e))
        return
    c1, c2 = st.columns(2)
    ambiguous = c1.selectbox(
        "Answer offset -1 with several occurrences", ON_AMBIGUOUS, key=f"{key}_on_ambiguous",
        format_func={"error": "refuse the file (say which question)", "first": "take the first occurrence",
                     "nearest": "take the one nearest the question's words"}.get,
        help="DuReader-robust files give answer_start -1 (position unknown); when the answer occurs several "
             "times in its context the loader must choose (python -m core.models.evaluate --on-ambiguous).")
    unscorable = c1.selectbox(
        "A question whose answer is not in its context", ON_UNSCORABLE, key=f"{key}_on_unscorable",
        format_func={"drop": "leave it out, load the rest (each one named)", "error": "refuse the file"}.get,
        help="Answers that differ from the context only in whitespace (a non-breaking or double space) are "
             "matched anyway; a question none of whose answers occurs at all cannot be scored.")
    lang = c2.text_input("Language (empty: guess)", "", key=f"{key}_lang", max_chars=8,
                         help="The language code of the file (en, de, zh, ...). Empty: from the file's articles, "
                              "its name, or the script of its text (Latin script is taken as English).").strip()
    up = st.file_uploader("SQuAD v1.1/v2.0 JSON, or .json.gz (also NoiseQA, DuReader-robust, CMRC 2018)",
                          type=["json", "gz"],
                          key=f"{key}_upload_{gen}",
                          max_upload_size=max(1, math.ceil(limit / 1024 / 1024)),
                          help=f"At most {limit / 1024 / 1024:.3g} MB.")
    if up is not None:
        name = up.name
        try:
            safe_json.check_upload_size(up.size, name)
            # messages start with the file name
            ds = load_squad(up, lang or None, name=name, on_ambiguous=ambiguous, on_unscorable=unscorable)
        except (DatasetError, safe_json.JSONLimitError, ValueError) as e:  # ValueError: a bad language code
            s[msg_key] = ("error", f"Not loaded: {e}")
        else:
            uploaded.pop(name, None)
            uploaded[name] = ds
            memory.release_when_collected(ds)  # the session's end gives its memory back
            while len(uploaded) > MAX_UPLOADS:
                uploaded.pop(next(iter(uploaded)))
            s[msg_key] = ("success", f"Loaded {count(len(ds), 'question')} from {name}.")
            s[f"{msg_key}_line"] = ds.load_line()   # what was recognised, repaired, guessed, dropped
            s[f"{msg_key}_left_out"] = [line for line in ds.report if line.startswith("left out: ")]
            s[f"{key}_dataset_next"] = f"upload:{name}"
        session_memory.drop_uploaded_file(up.file_id)  # parsed: Streamlit's copy can go
        del up
        s[gen_key] = gen + 1  # a new uploader, so the dropped file is never asked for again
        memory.trim_later(3.0)  # after this rerun has dropped them, with the parse's temporaries
        st.rerun()
    shown = s.pop(msg_key, None)
    if shown:
        (st.error if shown[0] == "error" else st.success)(md_escape(shown[1]))
    if line := s.pop(f"{msg_key}_line", None):
        st.caption(md_escape(line))
    if left_out := s.pop(f"{msg_key}_left_out", None):   # each question not loaded, by id and place
        with st.expander(f"{count(len(left_out), 'question')} left out"):
            st.text("\n".join(left_out))


def model_label(name: str, languages, lang: str | None = None, hub: bool = False) -> str:
    """A model's label in a picker: marked when it was not trained for the item's language
    ``lang`` (an English model offered on a German passage is not an equal choice), tagged with
    its languages when no item is in front of the user, and marked when it needs the hub.

    >>> model_label("minilm-squad", ("en",), "de")
    'minilm-squad · en only, not for de'
    >>> model_label("minilm-squad", ("en",), "en"), model_label("minilm-squad", ("en",))
    ('minilm-squad', 'minilm-squad')
    >>> model_label("minilm-cmrc-zh", ("zh",))
    'minilm-cmrc-zh (zh)'
    >>> model_label("xlm (hub)", ("ar", "de", "el", "en", "es", "zh"), "th", hub=True)
    'xlm (hub) · 6 languages, not for th · needs internet'
    """
    langs = tuple(languages)
    shown = "/".join(langs) if len(langs) <= 3 else f"{len(langs)} languages"
    label = name
    if lang and lang not in langs:
        label += f" · {shown}{' only' if len(langs) <= 3 else ''}, not for {lang}"
    elif not lang and "en" not in langs:
        label += f" ({shown})"
    return label + (" · needs internet" if hub else "")


def model_picker(key: str, default_all: bool = True, lang: str | None = None) -> list[str]:
    """Multiselect of the installed models, and of the hub entries for users with internet
    (never ticked by default; offline one fails at once with the reason). ``lang``, the language
    of the item in front of the user, marks the models not trained for it."""
    installed, entries, err = loaders.model_entries()
    if err:
        st.error(md_escape(err))
        return []
    hub = [m for m in entries if m.hf_id and not m.path]
    if not installed:
        st.warning(
            "**No QA model is installed.** The registry (models.toml) lists "
            + ", ".join(md_escape(m.name) for m in entries)
            + " but none of their folders is present. Train one with `python -m core.training` "
            "(see docs/MODELS.md) or add a local folder to models.toml."
            + (" Hub models below need internet." if hub else "")
        )
        if not hub:
            return []
    names = [m.name for m in installed] + [m.name for m in hub]
    langs = {m.name: m.languages for m in installed + hub}
    hub_names = {m.name for m in hub}
    # Until the user chooses, the best measured models of the item's language answer
    # (core.qa.registry.models_for_language); when the item's language changes, a selection the
    # user has not changed follows it, and one they chose is kept, with a one-click way back.
    best = registry.models_for_language(lang, installed) if installed else []
    # Each page keeps its own selection (components/persist.py): the speech trial's one scoring
    # model must not cut Ask's three, nor Sweeps' choice appear on Beat the AI.
    _relabel_models(f"{key}_models", lang, {n: (langs[n], n in hub_names) for n in names},
                    best if default_all else best[:1])
    persist.keep(f"{key}_models", names, default=list(best) if default_all else best[:1])
    chosen = st.multiselect("Models", names, key=f"{key}_models",
                            format_func=lambda n: model_label(n, langs[n], lang, n in hub_names),
                            help="Installed models from models.toml, then hub models (they download on "
                                 "first use and need internet). Until you change the selection, the "
                                 "best measured models for the item's language are ticked (model cards' "
                                 "XQuAD F1, see the Models page). A mark says when a model was not "
                                 "trained for the item's language.")
    _offer_language_models(f"{key}_models", lang, chosen, best if default_all else best[:1], langs)
    return chosen


def _offer_language_models(key: str, lang: str | None, chosen: list[str], best: list[str], langs: dict) -> None:
    """A one-click "Use the German models" when the user's own selection has a model not
    trained for the item's language (or none at all) and the language has models of its own."""
    from core.translate.languages import language_name

    if not lang or not best or chosen == best:
        return
    if chosen and all(lang in langs.get(n, ()) for n in chosen):
        return
    if not all(lang in langs.get(n, ()) for n in best):
        return   # no model trained for this language: the English fallback is no better
    def use() -> None:   # a callback: it runs before the picker is drawn again
        persist.hand_over({key: list(best)})
        st.session_state[f"{key}_auto"] = list(best)

    st.button(f"Use the {language_name(lang)} models", key=f"{key}_use_lang", on_click=use,
              help="Ticks " + ", ".join(best) + ": the best measured models for this language.")


def _relabel_models(key: str, lang: str | None, models: dict, best: list[str]) -> None:
    """Keep the models picker's chips true to the item's language when it changes, and let an
    untouched selection follow the language.

    The browser holds a multiselect's choice as the labels it showed: a model chosen on a
    German item comes back as "minilm-squad · en only, not for de", which after a switch to an
    English item is no longer an option, so Streamlit returned the label itself and the model
    silently stopped answering, while the chip kept its stale mark. Here those labels are mapped
    back to model names, and on a change of language the choice is set again, so that the
    browser redraws the chips with the new language's labels. ``models``: name -> (languages, hub).

    ``<key>_auto`` holds the selection last made for the user (``best`` of a language): while the
    selection still equals it, a change of language ticks the new language's ``best``; once the
    user has changed it, their choice stays.
    """
    s = st.session_state
    lang_key, auto_key = f"{key}_lang", f"{key}_auto"
    before = s.get(lang_key, lang)
    s[lang_key] = lang
    shadow = persist.SHADOW + key
    source = key if key in s else shadow
    if source not in s or not isinstance(s[source], list):
        s[auto_key] = list(best)   # the picker starts from ``best`` (persist.keep's default)
        return
    names = {model_label(n, ls, shown, hub): n for n, (ls, hub) in models.items() for shown in {before, lang}}
    value = list(dict.fromkeys(names.get(v, v) for v in s[source]))
    if before != lang and value == s.get(auto_key):
        value = list(best)
        s[auto_key] = list(best)
    if value != s[source] or before != lang:
        persist.hand_over({key: value})


STALE_S = 30.0   # a stale question box comes within seconds of an item change; typing a question takes longer


def item_picker(key: str, upload_box=None):
    """Pick a dataset item (number input + "Random item"); returns (dataset, example) or stops.
    With ``upload_box`` (a container for the upload expander), the dataset and the item share a row.

    When the item changes, the page's question box (``<key>_question``) is reset to its question,
    and stays so while the browser still sends the box's old value back (:data:`STALE_S`).
    """
    if upload_box is not None:
        c0, c1, c2 = st.columns([2.6, 2, 1.8], vertical_alignment="bottom")
        with c0:
            ds = dataset_picker(key, upload_box=upload_box)
    else:
        ds = dataset_picker(key)
    if ds is None or len(ds) == 0:
        st.stop()
    n = len(ds)
    if upload_box is None:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    if c2.button("Random item", key=f"{key}_random"):
        st.session_state[f"{key}_item"] = random.Random(time.time_ns()).randrange(n)
    persist.keep(f"{key}_item")
    if not 0 <= st.session_state.get(f"{key}_item", 0) < n:   # kept for a longer data set
        persist.hand_over({f"{key}_item": 0})
    idx = c1.number_input(f"Item (0–{n - 1})", 0, n - 1, key=f"{key}_item")
    ex = ds.examples[int(idx)]
    s, question, replaced = st.session_state, f"{key}_question", f"{key}_question_replaced"
    if s.get(f"{key}_item_id") != (ds.name, ex.id):
        s[replaced] = (s.get(question), ex.question, time.monotonic())
        s[f"{key}_item_id"] = (ds.name, ex.id)
        s[question] = ex.question
    elif (was := s.get(replaced)) and s.get(question) == was[0] != was[1] and time.monotonic() - was[2] < STALE_S:
        # A click that lands while the item's run is still drawing sends the question box's old
        # value with it, and a browser's widget value outranks one set in a run that was cut
        # short: the box would show the new item's question while the models answer the old one
        # (and a copied link would carry it). Two such clicks in a row (a loaded server) send it
        # twice, so the old value is put right until the browser sends the new one back.
        s[question] = was[1]
    else:   # the browser has the new question, or the old one was typed again on purpose
        s.pop(replaced, None)
    return ds, ex


def language_mismatch_note(models: list[str], lang: str) -> None:
    """A caption naming the selected models that were not trained for the context's language,
    and the installed ones that were: an English model on a Chinese context answers poorly."""
    from core.translate.languages import language_name

    # The slot is there on every run, note or not, so the elements after it keep their place
    # in Streamlit's element tree across reruns (no stale duplicates while a rerun renders).
    slot = st.empty()
    installed, _, _ = loaders.model_entries()
    langs = {m.name: m.languages for m in installed}
    off = [n for n in models if n in langs and lang not in langs[n]]
    if not off:
        return
    fits = [n for n, ls in langs.items() if lang in ls and n not in models]
    slot.caption(f"The context is {language_name(lang)}; {', '.join(off)} "
               f"{'was' if len(off) == 1 else 'were'} trained for "
               f"{'/'.join(sorted({language_name(x) for n in off for x in langs[n]}))} and will answer poorly."
               + (f" Trained for {language_name(lang)}: {', '.join(fits)}." if fits else ""))
