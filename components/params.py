"""A perturbation's parameter form, drawn from its declared parameters (:class:`core.perturb.base.Param`).

Variants asks for one value per parameter (:func:`param_form`); Sweeps asks for the values a
sweep runs (:func:`sweep_form`, then :func:`combinations`: one spec per combination). Both draw
the same box: the perturbation's id and description, then up to three columns of widgets, each
with the declaration's help text. The widget follows the declaration: a checkbox for a bool, a
number field for an int (a range slider in a sweep when it is bounded), a slider for a bounded
float, each moving by the declaration's step (:attr:`core.perturb.base.Param.widget_step`), a
choice for a str with choices (several in a sweep), a text field otherwise.

A parameter naming a model, file or folder (``mlm_model``) is never typed in a browser, which
could make the server load any folder or hub id: the box shows the server's setting instead and
the default is used (tests/test_reliability_confinement.py).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from components import persist
from components.text import md_escape
from core.perturb.base import Param, Perturbation


def value_widget(param: Param, label: str, key: str) -> Any:
    """A widget for one value of ``param``; returns the value chosen."""
    hint = param.help or None
    if param.type is bool:
        return st.checkbox(label, value=param.default, key=key, help=hint)
    if param.type is int:
        return int(st.number_input(label, min_value=param.min, max_value=param.max, value=param.default,
                                   step=int(param.widget_step), key=key, help=hint))
    if param.type is float:
        if param.min is not None:
            return float(st.slider(label, float(param.min), float(param.max), param.default,
                                   step=float(param.widget_step), key=key, help=hint))
        return float(st.number_input(label, value=param.default, step=float(param.widget_step), key=key, help=hint))
    if param.choices is not None:
        options = list(param.choices)
        return st.selectbox(label, options, index=options.index(param.default), key=key, help=hint)
    return st.text_input(label, value=param.default, key=key, help=hint)


def values_widget(param: Param, label: str, key: str) -> list:
    """A widget for the values of ``param`` a sweep runs: a range of a bounded int, several of the
    choices, else one value."""
    hint = param.help or None
    if param.type is int and param.sweep_values:
        lo, hi = st.slider(f"{label} (range: one spec per value)", int(param.min), int(param.max),
                           (param.default, param.default), step=int(param.widget_step), key=key, help=hint)
        return list(range(lo, hi + 1, int(param.widget_step)))
    if param.choices is not None:
        picked = st.multiselect(f"{label} (one spec per value)", list(param.choices), default=[param.default],
                                key=key, help=hint)
        return picked or [param.default]
    return [value_widget(param, label, key)]


def _form(p: Perturbation, key_prefix: str, draw: Callable[[Param, str, str], Any]) -> dict[str, Any]:
    spec = p.config_spec()
    values: dict[str, Any] = {}
    if not spec:
        return values
    with st.container(border=True):
        st.caption(f"**{md_escape(p.id)}** — {md_escape(p.description)}")
        columns = st.columns(min(3, len(spec)))
        for j, param in enumerate(spec.values()):
            label = f"{p.id} · {param.name}"
            with columns[j % len(columns)]:
                if param.names_a_resource:
                    st.caption(md_escape(f"{label}: {param.default or 'the server’s setting'} "
                                         "(set on the server, not here)"))
                    values[param.name] = None
                else:
                    values[param.name] = draw(param, label, f"{key_prefix}_{p.id}_{param.name}")
    return values


def param_form(p: Perturbation, key_prefix: str, *, keep: bool = True) -> dict[str, Any]:
    """One value per declared parameter of ``p`` (widget keys ``{key_prefix}_{id}_{name}``); a
    parameter set on the server gets its default. ``keep``: the values survive a visit to another page."""
    def draw(param: Param, label: str, key: str) -> Any:
        if keep:
            persist.keep(key)
        return value_widget(param, label, key)

    values = _form(p, key_prefix, draw)
    return {name: p.config_spec()[name].default if v is None else v for name, v in values.items()}


def sweep_form(p: Perturbation, key_prefix: str) -> dict[str, list]:
    """The values of each declared parameter of ``p`` that a sweep runs (widget keys as in
    :func:`param_form`); a parameter set on the server runs with its default alone."""
    values = _form(p, key_prefix, lambda param, label, key: values_widget(param, label, key))
    return {name: [p.config_spec()[name].default] if v is None else v for name, v in values.items()}


def combinations(values: Mapping[str, Sequence]) -> list[dict[str, Any]]:
    """Every combination of the parameters' values, in order: what a sweep runs one spec each of.

    >>> combinations({"n_words": [1, 2], "layout": ["qwerty", "qwertz"]})  # doctest: +NORMALIZE_WHITESPACE
    [{'n_words': 1, 'layout': 'qwerty'}, {'n_words': 1, 'layout': 'qwertz'}, {'n_words': 2, 'layout': 'qwerty'},
    {'n_words': 2, 'layout': 'qwertz'}]
    >>> combinations({})
    [{}]
    """
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]
