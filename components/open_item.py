"""Open an item on Ask or Variants with its passage and question filled in (Gallery's and the
Heatmaps rows table's "Open ..." buttons); Ask answers it at once with the models ticked there.

The item is a :class:`core.explore.gallery.Finding`. When its data set can be loaded here and
holds its example id, the page opens on that dataset item; otherwise the passage is pasted. The
values are handed over with ``components.persist.hand_over`` (the target page is not drawn in
this run), then ``st.switch_page`` goes there.
"""
from __future__ import annotations

import streamlit as st

from components import loaders, persist
from components.pickers import DEMO_LANGS
from components.state import current_data_dir
from core.explore import gallery as cg
from core.perturb import registry

__all__ = ["open_on"]


def _dataset_item(name: str, example_id: str):
    """(dataset, index) of ``example_id`` in the data set the pickers call ``name``, or None."""
    try:
        if name in DEMO_LANGS:
            ds = loaders.demo(DEMO_LANGS[name])
        else:
            d = current_data_dir()
            infos = {i.name: i for i in loaders.discovered(str(d))} if d else {}
            if name not in infos:
                return None
            ds = loaders.dataset(str(infos[name].path), str(d), name)
    except Exception:  # the data set moved or broke: open with the passage pasted instead
        return None
    for k, ex in enumerate(ds.examples):
        if ex.id == example_id:
            return ds, k
    return None


def open_on(page: str, f: cg.Finding) -> None:
    """Fill ``page``'s inputs ("ask" or "variants") with the item ``f`` and go there."""
    prefix = "ask" if page == "ask" else "var"
    item = _dataset_item(f.dataset, f.example_id) if f.dataset else None
    values: dict = {f"{prefix}_question": f.question if page == "ask" else f.original_question}
    if item is not None:
        ds, k = item
        values |= {f"{prefix}_source": "Dataset item", f"{prefix}_dataset": f.dataset, f"{prefix}_item": k,
                   f"{prefix}_item_id": (ds.name, ds.examples[k].id)}
    else:
        values |= {f"{prefix}_source": "Paste a context" if page == "ask" else "Type a question and context",
                   f"{prefix}_context": f.context}
    if page == "ask":
        # a flipped or a player's question is not the item's own: score it against the gold
        values["ask_gold"] = f.golds[0] if f.golds and (f.kind != "disagree" or item is None) else ""
        st.session_state.pop("ask_result", None)
        st.session_state["ask_answer_on_arrival"] = True   # opened to be seen answered, as a link with go=1
    else:
        st.session_state.pop("var_result", None)
        if item is None:   # a typed passage (a Beat-the-AI win): its gold answer scores the variants
            values["var_gold"] = f.golds[0] if f.golds else ""
        if f.perturbation:
            try:
                values[f"var_fam_{registry.get(f.perturbation).family}"] = [f.perturbation]
            except KeyError:
                pass
    persist.hand_over(values)
    st.switch_page("pages/ask.py" if page == "ask" else "pages/variants.py")
