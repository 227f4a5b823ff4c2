"""Permalinks on the pages: the copy-link button, and a link's state applied once when a page opens.

The state <-> query parameters translation and every check live in core.links; here are the parts
that need Streamlit:

* :func:`copy_link`: an inline Streamlit Components v2 component (no build step, as
  components/span_picker.py) that shows the view's address and copies it. The address is built in
  the browser from ``window.location`` (origin, and the path up to the app's base), never from a
  host name the server believes it has; only the query string comes from the server, as data.
* :func:`opened`: the link in the address, decoded once per session and address: a page applies it
  on its first run and then leaves the widgets to the user (the address keeps its query, so
  without this every rerun would put the link's values back). A bad link is shown as one line
  (escaped) and the page opens as without it.
* ``apply_*``: a link's values put into a page's widgets (components/persist.py, ``hand_over``),
  with names checked against what the server offers (data sets, items, models, sweep databases
  through the same listing and confinement as their pickers, sweeps, cells).
"""
from __future__ import annotations

import streamlit as st

from components import loaders, persist
from components.text import md_escape, sentence
from core import config, links
from core.links import LinkError

APPLIED = "_link_applied:"

# The link box: the address in a read-only field and a Copy button; the address is the page's
# base (window.location's path without the current page's own segment) + the view's page + query.
_JS = """
export default function(component) {
  const { data, parentElement } = component;
  let box = parentElement.querySelector('.qax-link');
  if (!box) {
    box = document.createElement('div');
    box.className = 'qax-link';
    const button = document.createElement('button');
    button.type = 'button';
    const field = document.createElement('input');
    field.readOnly = true;
    field.setAttribute('aria-label', 'Link to this view');
    const status = document.createElement('span');
    status.className = 'qax-link-status';
    status.setAttribute('role', 'status');
    box.append(button, field, status);
    parentElement.appendChild(box);
  }
  const [button, field, status] = box.children;
  button.textContent = data.label || 'Copy link';
  const parts = window.location.pathname.split('/');
  if (parts.length > 1 && (parts[parts.length - 1] === '' || (data.pages || []).includes(parts[parts.length - 1]))) {
    parts.pop();
  }
  const url = window.location.origin + parts.join('/') + '/' + data.page + (data.query ? '?' + data.query : '');
  field.value = url;
  box.dataset.url = url;
  button.onclick = async () => {
    try {
      await navigator.clipboard.writeText(url);
      status.textContent = 'Copied';
    } catch (e) {
      field.focus();
      field.select();
      status.textContent = 'Selected: press Ctrl+C';
    }
  };
}
"""
_CSS = """
.qax-link { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
.qax-link button { white-space: nowrap; flex: none; padding: 0.25rem 0.75rem; border-radius: 0.5rem;
                   border: 1px solid rgba(49, 51, 63, 0.2); background: white; cursor: pointer;
                   font: inherit; }
.qax-link input { flex: 1 1 12rem; min-width: 0; font-family: monospace; font-size: 0.8rem;
                  padding: 0.25rem 0.5rem; border: 1px solid rgba(49, 51, 63, 0.2); border-radius: 0.5rem;
                  color: #31333f; background: #f8f9fb; }
.qax-link-status { font-size: 0.8rem; color: #555; }
"""
LINK_BOX = st.components.v2.component("qax_copy_link", js=_JS, css=_CSS)


def copy_link(link: links.Link | None, why_not: str | None = None, *, key: str,
              label: str = "🔗 Copy link") -> None:
    """The copy-link box for ``link``; ``why_not`` (or no link): a caption saying why this state
    cannot be linked instead."""
    if link is None or why_not:
        st.caption(md_escape(f"No link for this view: {why_not or 'nothing to link yet'}."))
        return
    view = links.VIEW_OF[type(link)]
    LINK_BOX(data={"page": links.PAGES[view], "pages": sorted(set(links.PAGES.values())),
                   "query": links.query_string(link), "label": label}, key=key)


# ------------------------------------------------------------------------------------- opening

def _params() -> dict[str, list[str]]:
    qp = st.query_params
    return {k: list(qp.get_all(k)) for k in qp.keys()}


def opened(view: str, known: links.Known = links.Known()) -> links.Link | None:
    """The link this page was opened with, the first time this session sees this address; None
    when there is none, when it was applied already, or when it is bad (then shown why)."""
    params = _params()
    if not params:
        st.session_state.pop(APPLIED + view, None)
        return None
    signature = repr(sorted(params.items()))
    if st.session_state.get(APPLIED + view) == signature:
        return None
    st.session_state[APPLIED + view] = signature
    try:
        return links.decode(view, params, known)
    except ValueError as e:   # LinkError, and any value a check below it refuses: one line, never a traceback
        refuse(e)
        return None


def refuse(e: Exception) -> None:
    """A link that decoded but names what this server does not have."""
    st.error(md_escape(f"This link cannot be opened: {sentence(e)} The page opens without it."))


def known_models() -> frozenset:
    installed, entries, _ = loaders.model_entries()
    hub = [m for m in entries if m.hf_id and not m.path]
    return frozenset(m.name for m in list(installed) + hub)


def known_datasets() -> dict[str, str]:
    """The data sets the pickers offer (name -> path; '' for the bundled demo sets); uploads are
    the visitor's own and never linked."""
    from components.pickers import DEMO_LANGS
    from components.state import current_data_dir

    d = current_data_dir()
    found = {i.name: str(i.path) for i in loaders.discovered(str(d)) if i.role in ("eval", "challenge")} if d else {}
    return {name: "" for name in DEMO_LANGS} | found


def _item_index(name: str, example_id: str):
    """(dataset, index) of ``example_id`` in the data set the pickers call ``name``; LinkError."""
    from components.pickers import DEMO_LANGS
    from components.state import current_data_dir

    try:
        if name in DEMO_LANGS:
            ds = loaders.demo(DEMO_LANGS[name])
        else:
            ds = loaders.dataset(known_datasets()[name], str(current_data_dir()), name)
    except Exception as e:   # the data set moved or broke since the link was made
        raise LinkError(f"link parameter ds: {name} cannot be read: {e}") from None
    for k, ex in enumerate(ds.examples):
        if ex.id == example_id:
            return ds, k
    raise LinkError(f"link parameter id: no item {example_id[:60]!r} in {name}")


def source_known() -> links.Known:
    return links.Known(models=known_models(), datasets=frozenset(known_datasets()))


def _source_values(prefix: str, link, typed: str) -> dict:
    """The item or context and question widgets of Ask (``ask``) or Variants (``var``)."""
    values: dict = {f"{prefix}_models": list(link.models)}
    if link.dataset is not None:
        ds, k = _item_index(link.dataset, link.item)
        ex = ds.examples[k]
        values |= {f"{prefix}_source": "Dataset item", f"{prefix}_dataset": link.dataset, f"{prefix}_item": k,
                   f"{prefix}_item_id": (ds.name, ex.id),
                   f"{prefix}_question": ex.question if link.question is None else link.question}
    else:
        values |= {f"{prefix}_source": typed, f"{prefix}_context": link.context,
                   f"{prefix}_question": link.question or ""}
    return values


def apply_ask() -> None:
    """Ask opened with a link: its item or context, question, models, n-best and gold; answered
    at once when the link's view showed answers."""
    link = opened("ask", source_known())
    if link is None:
        return
    try:
        values = _source_values("ask", link, "Paste a context")
    except LinkError as e:
        refuse(e)
        return
    persist.hand_over(values | {"ask_nbest": link.n_best, "ask_gold": link.gold, "ask_models_auto": None})
    st.session_state.pop("ask_result", None)
    st.session_state["ask_answer_now"] = link.answer and bool(link.models)
    st.session_state["ask_auto_answer"] = True


def apply_variants() -> bool:
    """Variants opened with a link: item or context, question, models, perturbations with their
    parameters, chain, seed and repeats. True when the table should be generated at once."""
    from core.perturb import registry
    from core.perturb.spec import parse_spec

    link = opened("variants", source_known())
    if link is None:
        return False
    try:
        values = _source_values("var", link, "Type a question and context")
    except LinkError as e:
        refuse(e)
        return False
    families: dict[str, list[str]] = {family: [] for family in registry.by_family()}
    chain = []
    for k, text in enumerate(link.specs + link.chain):   # a perturbation's parameters: one box, shared
        spec = parse_spec(text)
        p = registry.get(spec.id)
        (families[p.family] if k < len(link.specs) else chain).append(p.id)
        values |= {f"var_param_{p.id}_{name}": value for name, value in spec.params_dict.items()}
    values |= {f"var_fam_{family}": ids for family, ids in families.items()}
    persist.hand_over(values | {"var_chain": chain, "var_seed": link.seed, "var_repeats": link.repeats,
                                "var_models_auto": None, "var_gold": link.gold})
    st.session_state.pop("var_result", None)
    st.session_state[APPLIED + "var_row"] = link.row
    return link.run and bool(link.models) and bool(link.specs or len(link.chain) >= 2)


def first_row() -> int:
    """The Variants row to show in detail after generating: the link's, once, else the first."""
    return int(st.session_state.pop(APPLIED + "var_row", 0))


# ------------------------------------------------------------------------ sweep databases, sweeps

def listed_stores() -> dict[str, str]:
    """The sweep databases the pickers list, by link name (core.links.store_names) -> path, and the
    bundled demo sweep as :data:`core.links.DEMO_STORE` (-> the picker's demo entry)."""
    from components.sweep_db_picker import DEMO, default_db_path, find_sweep_dbs

    default = default_db_path()
    found = find_sweep_dbs(tuple(map(str, config.sweep_db_roots())))
    return links.store_names([default] + [p for p in found if p != default]) | {links.DEMO_STORE: DEMO}


def store_name(choice) -> str | None:
    """The link name of the sweep database the picker chose (components.sweep_db_picker.DbChoice;
    None: not one the pickers list)."""
    from pathlib import Path

    if choice is None or choice.path is None:
        return None
    if choice.demo:
        return links.DEMO_STORE
    wanted = str(Path(choice.path).resolve())
    return next((n for n, p in listed_stores().items()
                 if n != links.DEMO_STORE and str(Path(p).resolve()) == wanted), None)


def _apply_store(prefix: str, name: str | None) -> None:
    if name is None:
        return
    from components.sweep_db_picker import DEMO, STATE_KEY

    if name == links.DEMO_STORE:   # chosen by the link, not for want of the user's own sweeps
        st.session_state[f"{prefix}_db"] = DEMO
        st.session_state[f"{prefix}_db_demo_auto"] = False
        return
    path = config.confine(listed_stores()[name], config.sweep_db_roots(), "sweep database")
    st.session_state[f"{prefix}_db"] = str(path)
    st.session_state[STATE_KEY] = str(path)


def _stores_known() -> links.Known:
    return links.Known(stores=frozenset(listed_stores()))


def opened_heatmaps() -> links.HeatmapLink | None:
    """Heatmaps opened with a link: its sweep database chosen (call before the picker)."""
    link = opened("heatmaps", _stores_known())
    if link is not None:
        try:
            _apply_store("hm", link.store)
        except (config.ConfinementError, KeyError) as e:   # listed, then gone or moved out of bounds
            refuse(e)
            return None
        st.session_state["hm_metric"] = link.metric
    return link


def apply_sweep(link: links.HeatmapLink | None, sweeps: list[dict]) -> links.HeatmapLink | None:
    """The link's sweep chosen (before the Sweep picker); None (said why) when it is not stored."""
    if link is None:
        return None
    match = [s["id"] for s in sweeps if s["name"] == link.sweep]
    if not match:
        refuse(LinkError(f"link parameter sweep: no sweep named {link.sweep[:60]!r} in {link.store}"))
        return None
    persist.hand_over({"hm_sweep": match[-1]})
    return link


def tab(link, names: list[str]) -> str | None:
    """The tab a link opens (None: the first); a tab this sweep does not have is said, not fatal."""
    if link is None or link.tab is None:
        return None
    if link.tab not in names:
        refuse(LinkError(f"link parameter tab: this sweep has no tab {link.tab[:60]!r}"))
        return None
    return link.tab


def apply_cell(link: links.HeatmapLink | None, sweep_id: int, plotted: list) -> None:
    """The link's cell and example selected in the drill-down (then the page runs again, so the
    heatmap outlines it)."""
    if link is None or link.model is None:
        return
    at = [i for i, c in enumerate(plotted) if c.model == link.model and c.label == link.cell]
    if not at:
        refuse(LinkError(f"link parameter cell: this sweep has no cell {link.model[:60]} × {link.cell[:60]}"))
        return
    st.session_state.update({"hm_cell": at[0], "hm_cell_of": sweep_id, "hm_example": link.example,
                             "hm_example_of": (sweep_id, at[0]),
                             "hm_show_answers": f"{link.shown} answers"})
    st.rerun()


def heatmap_link(choice, sweep: dict, plotted: list, metric: str) -> tuple[links.HeatmapLink | None, str | None]:
    """The current heatmap cell and drill-down example as a link, or why there is none (``choice``:
    the database picker's)."""
    name = store_name(choice)
    if name is None:
        return None, "this sweep database is not one the server lists"
    s = st.session_state
    i = s.get("hm_cell", 0)
    cell = plotted[i] if 0 <= i < len(plotted) else None
    example = s.get("hm_example", 0) if s.get("hm_example_of") == (sweep["id"], i) else 0
    shown = "clean" if s.get("hm_show_answers") == "clean answers" else "perturbed"
    return links.HeatmapLink(store=name, sweep=sweep["name"], tab="Heatmap", metric=metric,
                             model=cell.model if cell else None, cell=cell.label if cell else None,
                             example=int(example), shown=shown), None


def opened_gallery() -> links.GalleryLink | None:
    """The Gallery opened with a link: its sweep database chosen (call before the picker)."""
    link = opened("gallery", _stores_known())
    if link is not None:
        try:
            _apply_store("gal", link.store)
        except (config.ConfinementError, KeyError) as e:
            refuse(e)
            return None
    return link


def apply_gallery_sweeps(link: links.GalleryLink | None, by_id: dict) -> None:
    """The link's sweeps ticked (before the Sweeps picker); a name not stored is said."""
    if link is None or not link.sweeps:
        return
    ids = {s["name"]: i for i, s in by_id.items()}
    missing = [n for n in link.sweeps if n not in ids]
    if missing:
        refuse(LinkError(f"link parameter sweep: no sweep named {missing[0][:60]!r} in this database"))
    persist.hand_over({"gal_sweeps": [ids[n] for n in link.sweeps if n in ids]})


def linked_first(link: links.GalleryLink | None, found: dict) -> tuple:
    """``found`` with the linked finding first in its kind, and that finding (None: no link, or
    not found, which is said)."""
    if link is None or link.item is None:
        return found, None
    hits = [f for f in found[link.kind] if f.example_id == link.item
            and (link.question is None or f.question == link.question)]
    if not hits:
        refuse(LinkError(f"link parameter id: no {link.kind} example {link.item[:60]!r} in the chosen sweeps"))
        return found, None
    return found | {link.kind: hits[:1] + [f for f in found[link.kind] if f is not hits[0]]}, hits[0]


def gallery_link(choice, sweep_names: list[str], finding) -> links.GalleryLink | None:
    """A Gallery finding as a link (``choice``: the database picker's, None: no sweep)."""
    name = store_name(choice)
    return links.GalleryLink(store=name, sweeps=tuple(sweep_names), kind=finding.kind, item=finding.example_id,
                             question=finding.question)


# ------------------------------------------------------------------------ the current state as a link

def _source_link(prefix: str, ex, context: str, question: str) -> tuple[dict, str | None]:
    """The item (by its picker's name and id) or the pasted context, and the question, of Ask or
    Variants as link fields, or why they cannot travel in a link."""
    if ex is not None:
        name = st.session_state.get(f"{prefix}_dataset") or ""
        if name not in known_datasets():
            return {}, "an uploaded data set stays in your session; a link names only the server's data sets"
        return {"dataset": name, "item": ex.id,
                "question": None if question == ex.question else question}, links.too_long_to_link(None, question)
    return {"context": context, "question": question}, links.too_long_to_link(context, question)


def ask_link(ex, context: str, question: str, models: list[str], n_best: int, gold: str,
             answered: bool) -> tuple[links.AskLink | None, str | None]:
    """Ask's view as a link, or why it cannot be one."""
    fields, why = _source_link("ask", ex, context, question)
    if why or not (context.strip() or ex is not None):
        return None, why or "paste a context first"
    return links.AskLink(**fields, models=tuple(models), n_best=n_best, gold=gold, answer=answered), None


def variants_link(ex, context: str, question: str, models: list[str], chosen: list[str], params_of: dict,
                  chain: list[str], seed: int, repeats: int,
                  row: int | None, gold: str = "") -> tuple[links.VariantsLink | None, str | None]:
    """Variants' view as a link, or why it cannot be one; ``row``: the table's row shown in detail
    (None: no table is shown for these inputs)."""
    from core.perturb.spec import PerturbationSpec

    fields, why = _source_link("var", ex, context, question)
    if why or not (context.strip() or ex is not None):
        return None, why or "paste a context first"
    from core.perturb import registry

    def settable(pid: str) -> dict:   # a parameter naming a server resource stays the server's
        server = {q.name for q in registry.get(pid).parameters if q.names_a_resource}
        return {k: v for k, v in params_of.get(pid, {}).items() if v is not None and k not in server}

    specs = tuple(PerturbationSpec.make(pid, settable(pid)).text for pid in chosen)
    steps = tuple(PerturbationSpec.make(pid, settable(pid)).text for pid in chain)
    too_many = links.too_many_to_link(perturbations=specs, chain_steps=steps, models=models)
    if too_many:
        return None, too_many
    return links.VariantsLink(**fields, models=tuple(models), specs=specs, chain=steps, seed=seed,
                              repeats=repeats, run=row is not None, row=row or 0,
                              gold=gold if ex is None else ""), None
