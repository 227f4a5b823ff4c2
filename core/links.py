"""Permalinks: the state of an Ask, Variants, Heatmaps or Gallery view as URL query parameters,
and back, checked.

A link carries names and small values only, never a server path or a file: a data set by the name
its picker offers (``demo.en``, ``xquad.en``) and an item by its id, a pasted context only while it
is at most :data:`MAX_CONTEXT_CHARS` characters, models by their registry names, a sweep database
by its *store name* (:func:`store_names`: the file's name among the databases the server lists, never
a folder), a sweep by its name. Every link starts with ``v=1`` (:data:`VERSION`).

Decoding (:func:`decode`) trusts nothing: the whole query is measured first (:data:`MAX_QUERY_CHARS`),
then each parameter's name, type and length, then each name against what the server offers
(:class:`Known`). The first problem raises :class:`LinkError`, a one-line message naming the
parameter; the page shows it and otherwise works as if opened without the link.

>>> link = AskLink(dataset="demo.en", item="d1", question="Who?", models=("minilm-squad",))
>>> query_string(link)
'v=1&ds=demo.en&id=d1&q=Who%3F&m=minilm-squad&nbest=5&go=1'
>>> known = Known(models=frozenset({"minilm-squad"}), datasets=frozenset({"demo.en"}))
>>> decode("ask", parse_query(query_string(link)), known) == link
True
>>> decode("ask", {"v": ["2"]}, known)
Traceback (most recent call last):
...
core.links.LinkError: link parameter v: version '2' is not one this server reads (it reads v=1)
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from urllib.parse import parse_qs, urlencode

__all__ = ["VERSION", "PAGES", "MAX_QUERY_CHARS", "MAX_CONTEXT_CHARS", "MAX_QUESTION_CHARS", "LinkError",
           "Known", "AskLink", "VariantsLink", "HeatmapLink", "GalleryLink", "encode", "query_string",
           "parse_query", "decode", "store_names", "too_long_to_link", "too_many_to_link", "GALLERY_KINDS",
           "METRICS", "DEMO_STORE"]

VERSION = 1
# The address of each view's page (app.py's url_path). Ask is the default page: it is served at the
# app's root ("/"); its reserved address "home" answers "Page not found", so its links use the root.
PAGES = {"ask": "", "variants": "variants", "heatmaps": "heatmaps", "gallery": "gallery"}
MAX_QUERY_CHARS = 8_000      # a whole query string: what browsers and servers pass on without trouble
MAX_CONTEXT_CHARS = 2_000    # a pasted context a link may carry (a data set item travels by its id)
MAX_QUESTION_CHARS = 500     # a question (typed, perturbed or a player's) a link may carry
MAX_NAME_CHARS = 200         # a data set, item, model, sweep or store name, a tab's title
MAX_LIST = 20                # models, perturbation specs or sweeps in one link
MAX_SPEC_CHARS = 300         # one perturbation spec
MAX_SEED = 2**31 - 1
MAX_REPEATS = 50             # Variants' own cap (core.explore.variants.MAX_REPEATS)
GALLERY_KINDS = ("disagree", "flip", "beaten")
DEMO_STORE = "bundled-demo"  # the bundled demo sweep's store name (a database file's always has a suffix)
METRICS = ("f1", "em")
ANSWER_SHOWN = ("perturbed", "clean")
# Streamlit's own query parameters: left alone.
_STREAMLIT_PARAMS = frozenset({"embed", "embed_options"})


class LinkError(ValueError):
    """A link this server will not open; the message names the parameter and what is wrong."""


@dataclass(frozen=True)
class Known:
    """What the server offers now: a link may name only these (empty: not checked by the caller)."""

    models: frozenset = frozenset()
    datasets: frozenset = frozenset()
    stores: frozenset = frozenset()


@dataclass(frozen=True)
class AskLink:
    """Ask: a data set item (``dataset`` + ``item`` id) or a pasted ``context``; the question
    (None: the item's own), the models, n-best, a gold answer, and whether the answers were shown."""

    dataset: str | None = None
    item: str | None = None
    context: str | None = None
    question: str | None = None
    models: tuple[str, ...] = ()
    n_best: int = 5
    gold: str = ""
    answer: bool = True


@dataclass(frozen=True)
class VariantsLink:
    """Variants: the item or context and question as on Ask, perturbation specs in the sweep's spec
    language (``keyboard_Q:p=0.5``), an optional chain (its steps, each a spec), seed, repeats, and
    whether the table was generated, and the row shown in detail."""

    dataset: str | None = None
    item: str | None = None
    context: str | None = None
    question: str | None = None
    models: tuple[str, ...] = ()
    specs: tuple[str, ...] = ()
    chain: tuple[str, ...] = ()
    seed: int = 0
    repeats: int = 3
    run: bool = True
    row: int = 0
    gold: str = ""            # a typed passage's gold answer (an item's own question has the item's)


@dataclass(frozen=True)
class HeatmapLink:
    """Heatmaps: a store name, a sweep name, a tab, the metric, and a cell (model + the cell's
    perturbation label) with the example shown in its drill-down (0 = the largest F1 loss)."""

    store: str
    sweep: str
    tab: str | None = None
    metric: str = "f1"
    model: str | None = None
    cell: str | None = None
    example: int = 0
    shown: str = "perturbed"


@dataclass(frozen=True)
class GalleryLink:
    """Gallery: a store name, the sweeps looked in (names), and one finding: its kind, item id and
    question (a flip's question is the perturbed one)."""

    store: str | None = None
    sweeps: tuple[str, ...] = ()
    kind: str = "disagree"
    item: str | None = None
    question: str | None = None


Link = AskLink | VariantsLink | HeatmapLink | GalleryLink
VIEW_OF = {AskLink: "ask", VariantsLink: "variants", HeatmapLink: "heatmaps", GalleryLink: "gallery"}

# parameter name -> dataclass field, per view (short names keep links short)
_NAMES = {
    "ask": {"ds": "dataset", "id": "item", "ctx": "context", "q": "question", "m": "models",
            "nbest": "n_best", "gold": "gold", "go": "answer"},
    "variants": {"ds": "dataset", "id": "item", "ctx": "context", "q": "question", "m": "models",
                 "p": "specs", "chain": "chain", "seed": "seed", "n": "repeats", "go": "run", "row": "row",
                 "gold": "gold"},
    "heatmaps": {"db": "store", "sweep": "sweep", "tab": "tab", "metric": "metric", "model": "model",
                 "cell": "cell", "ex": "example", "show": "shown"},
    "gallery": {"db": "store", "sweep": "sweeps", "kind": "kind", "id": "item", "q": "question"},
}
_CLASS = {"ask": AskLink, "variants": VariantsLink, "heatmaps": HeatmapLink, "gallery": GalleryLink}


# ---------------------------------------------------------------------------------------- encoding

def encode(link: Link) -> dict[str, list[str]]:
    """The link's query parameters (each a list: lists repeat their parameter); defaults and
    empty values are left out, except ``v``."""
    view = VIEW_OF[type(link)]
    out: dict[str, list[str]] = {"v": [str(VERSION)]}
    for name, attr in _NAMES[view].items():
        value = getattr(link, attr)
        if value is None or value == "" or value == ():
            continue
        default = next(f.default for f in fields(link) if f.name == attr)
        if isinstance(value, bool):
            if value == default and attr not in ("answer", "run"):
                continue
            out[name] = ["1" if value else "0"]
        elif isinstance(value, tuple):
            out[name] = list(value)
        elif isinstance(value, int):
            if value == default and attr not in ("n_best", "seed", "repeats"):
                continue
            out[name] = [str(value)]
        else:
            if value == default and attr in ("metric", "shown", "kind") and view != "gallery":
                continue
            out[name] = [value]
    return out


def query_string(link: Link) -> str:
    """The link as a URL query (without ``?``), percent-encoded."""
    return urlencode(encode(link), doseq=True)


def parse_query(text: str) -> dict[str, list[str]]:
    """A query string as parameter -> values (a repeated parameter keeps every value, in order).

    >>> parse_query("v=1&m=a&m=b&q=%3Cb%3E")
    {'v': ['1'], 'm': ['a', 'b'], 'q': ['<b>']}
    """
    return parse_qs(text, keep_blank_values=True, max_num_fields=200)


def too_long_to_link(context: str | None, question: str | None) -> str | None:
    """Why a pasted context or a question cannot travel in a link (None when it can).

    >>> too_long_to_link("x" * 2001, "Who?")
    'the pasted context is 2,001 characters; a link carries at most 2,000 (use a data set item instead)'
    >>> too_long_to_link("short", "Who?") is None
    True
    """
    if context is not None and len(context) > MAX_CONTEXT_CHARS:
        return (f"the pasted context is {len(context):,} characters; a link carries at most "
                f"{MAX_CONTEXT_CHARS:,} (use a data set item instead)")
    if question is not None and len(question) > MAX_QUESTION_CHARS:
        return f"the question is {len(question):,} characters; a link carries at most {MAX_QUESTION_CHARS:,}"
    return None


def too_many_to_link(**lists: Sequence) -> str | None:
    """Why lists of models, specs or sweeps cannot travel in a link (None when they can): the link
    box says so, instead of offering a link that opens without them.

    >>> too_many_to_link(perturbations=["TUQ"] * 24, models=["m"])
    '24 perturbations chosen; a link carries at most 20'
    >>> too_many_to_link(perturbations=["TUQ"], models=["m"]) is None
    True
    """
    for what, values in lists.items():
        if len(values) > MAX_LIST:
            return f"{len(values)} {what.replace('_', ' ')} chosen; a link carries at most {MAX_LIST}"
    return None


# ---------------------------------------------------------------------------------------- decoding

def _one(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise LinkError(f"link parameter {name}: given {len(values)} times; it takes one value")
    return values[0]


def _text(value: str, name: str, limit: int, what: str = "value") -> str:
    if len(value) > limit:
        raise LinkError(f"link parameter {name}: {len(value):,} characters; the most a link may carry "
                        f"is {limit:,}")
    if "\x00" in value:
        raise LinkError(f"link parameter {name}: the {what} holds a NUL character")
    return value


def _int(value: str, name: str, lo: int, hi: int) -> int:
    if not re.fullmatch(r"[0-9]{1,10}", value):
        raise LinkError(f"link parameter {name}: {value[:40]!r} is not a whole number")
    n = int(value)
    if not lo <= n <= hi:
        raise LinkError(f"link parameter {name}: {n} is outside {lo}–{hi:,}")
    return n


def _flag(value: str, name: str) -> bool:
    if value not in ("0", "1"):
        raise LinkError(f"link parameter {name}: {value[:40]!r} is not 0 or 1")
    return value == "1"


def _choice(value: str, name: str, options: Iterable[str], what: str) -> str:
    options = list(options)
    if value not in options:
        raise LinkError(f"link parameter {name}: {value[:60]!r} is not a {what} this server offers"
                        + (f" ({', '.join(options[:8])}{', …' if len(options) > 8 else ''})" if options else ""))
    return value


def _names(params: Mapping[str, list[str]], name: str, known: frozenset, what: str) -> tuple[str, ...]:
    values = params.get(name) or []
    if len(values) > MAX_LIST:
        raise LinkError(f"link parameter {name}: {len(values)} values; a link carries at most {MAX_LIST}")
    out = []
    for v in values:
        _text(v, name, MAX_NAME_CHARS)
        if known and v not in known:
            raise LinkError(f"link parameter {name}: {v[:60]!r} is not a {what} this server offers")
        out.append(v)
    return tuple(dict.fromkeys(out))


def decode(view: str, params: Mapping[str, Sequence[str]], known: Known = Known()) -> Link | None:
    """The link in ``params`` (parameter -> values) for ``view``, checked; None when the address
    carries no link. :class:`LinkError` names the first bad parameter."""
    params = {str(k): [str(v) for v in (vs if isinstance(vs, (list, tuple)) else [vs])]
              for k, vs in params.items() if k not in _STREAMLIT_PARAMS}
    if not params:
        return None
    size = sum(len(k) + len(v) + 2 for k, vs in params.items() for v in vs)
    if size > MAX_QUERY_CHARS:
        raise LinkError(f"the link's parameters are {size:,} characters; a link may carry at most "
                        f"{MAX_QUERY_CHARS:,}")
    version = _one(params, "v")
    if version is None:
        raise LinkError(f"link parameter v: missing (a link of this app starts with v={VERSION})")
    if version != str(VERSION):
        raise LinkError(f"link parameter v: version {version[:20]!r} is not one this server reads "
                        f"(it reads v={VERSION})")
    allowed = _NAMES[view]
    for k in params:
        if k != "v" and k not in allowed:
            raise LinkError(f"link parameter {k[:40]!r}: not one a {view} link takes "
                            f"({', '.join(['v', *allowed])})")
    return {"ask": _ask, "variants": _variants, "heatmaps": _heatmap, "gallery": _gallery}[view](params, known)


def _source(params: Mapping[str, list[str]], known: Known) -> dict:
    """The item or pasted context and the question, shared by Ask and Variants."""
    ds, item, ctx, q = (_one(params, k) for k in ("ds", "id", "ctx", "q"))
    if ctx is not None and (ds is not None or item is not None):
        raise LinkError("link parameter ctx: a link names a data set item (ds, id) or a pasted context, not both")
    if ctx is None and (ds is None) != (item is None):
        raise LinkError(f"link parameter {'id' if item is None else 'ds'}: missing (a data set item needs "
                        "both ds and id)")
    if ctx is None and ds is None:
        raise LinkError("link parameter ds: missing (the link names neither a data set item nor a context)")
    if ds is not None:
        _text(ds, "ds", MAX_NAME_CHARS)
        if known.datasets:
            _choice(ds, "ds", sorted(known.datasets), "data set")
        _text(item, "id", MAX_NAME_CHARS)
    if ctx is not None:
        _text(ctx, "ctx", MAX_CONTEXT_CHARS, "context")
        if not ctx.strip():
            raise LinkError("link parameter ctx: the context is empty")
    if q is not None:
        _text(q, "q", MAX_QUESTION_CHARS, "question")
    return {"dataset": ds, "item": item, "context": ctx, "question": q,
            "models": _names(params, "m", known.models, "model")}


def _ask(params, known: Known) -> AskLink:
    nbest, gold, go = (_one(params, k) for k in ("nbest", "gold", "go"))
    return AskLink(**_source(params, known),
                   n_best=5 if nbest is None else _int(nbest, "nbest", 1, 10),
                   gold="" if gold is None else _text(gold, "gold", MAX_QUESTION_CHARS),
                   answer=True if go is None else _flag(go, "go"))


def _specs(params: Mapping[str, list[str]], name: str) -> tuple[str, ...]:
    """Each value of ``name``: one perturbation of the catalogue with declared parameters, written
    as the spec language writes it."""
    from core.perturb import registry
    from core.perturb.spec import SpecError, parse_spec

    catalogue = {p.id for p in registry.all_perturbations()}
    raw = params.get(name) or []
    if len(raw) > MAX_LIST:
        raise LinkError(f"link parameter {name}: {len(raw)} specs; a link carries at most {MAX_LIST}")
    specs = []
    for text in raw:
        _text(text, name, MAX_SPEC_CHARS, "spec")
        try:
            spec = parse_spec(text)
        except (SpecError, ValueError) as e:
            raise LinkError(f"link parameter {name}: {text[:60]!r}: {e}") from None
        if spec.is_chain or spec.is_file or spec.id not in catalogue:
            raise LinkError(f"link parameter {name}: {text[:60]!r} is not one perturbation of this server's "
                            "catalogue (a chain's steps are listed one by one in chain=, files are not linked)")
        perturbation = registry.get(spec.id)
        declared = {q.name: q for q in perturbation.parameters}
        for key in spec.params_dict:
            if key in declared and declared[key].names_a_resource:   # a model or folder: the server's choice
                raise LinkError(f"link parameter {name}: {spec.id}'s {key} names a server resource; a link "
                                "cannot set it")
        try:
            perturbation.resolve_params(spec.params_dict)
        except ValueError as e:   # PerturbationError: an unknown parameter, a wrong type or value
            raise LinkError(f"link parameter {name}: {e}") from None
        specs.append(spec.text)
    return tuple(specs)


def _variants(params, known: Known) -> VariantsLink:
    seed, n, go, row, gold = (_one(params, k) for k in ("seed", "n", "go", "row", "gold"))
    return VariantsLink(**_source(params, known), specs=tuple(dict.fromkeys(_specs(params, "p"))),
                        gold="" if gold is None else _text(gold, "gold", MAX_QUESTION_CHARS),
                        chain=_specs(params, "chain"),
                        seed=0 if seed is None else _int(seed, "seed", 0, MAX_SEED),
                        repeats=3 if n is None else _int(n, "n", 1, MAX_REPEATS),
                        run=True if go is None else _flag(go, "go"),
                        row=0 if row is None else _int(row, "row", 0, 100_000))


def _store(params, known: Known, required: bool) -> str | None:
    store = _one(params, "db")
    if store is None:
        if required:
            raise LinkError("link parameter db: missing (the sweep database's name)")
        return None
    _text(store, "db", MAX_NAME_CHARS)
    if "/" in store or "\\" in store or store.startswith("."):
        raise LinkError(f"link parameter db: {store[:60]!r} is a path; a link names a sweep database by "
                        "its name only")
    if known.stores and store not in known.stores:
        raise LinkError(f"link parameter db: {store[:60]!r} is not a sweep database this server lists")
    return store


def _heatmap(params, known: Known) -> HeatmapLink:
    store = _store(params, known, required=True)
    sweep = _one(params, "sweep")
    if sweep is None:
        raise LinkError("link parameter sweep: missing (the sweep's name)")
    values = {k: _one(params, k) for k in ("tab", "metric", "model", "cell", "ex", "show")}
    for k in ("tab", "model", "cell"):
        if values[k] is not None:
            _text(values[k], k, MAX_NAME_CHARS)
    if (values["model"] is None) != (values["cell"] is None):
        raise LinkError(f"link parameter {'cell' if values['cell'] is None else 'model'}: missing (a cell "
                        "is a model and a perturbation)")
    # the model is checked against the sweep's cells (a sweep may name models since removed)
    return HeatmapLink(store=store, sweep=_text(sweep, "sweep", MAX_NAME_CHARS), tab=values["tab"],
                       metric="f1" if values["metric"] is None else _choice(values["metric"], "metric", METRICS,
                                                                            "metric"),
                       model=values["model"], cell=values["cell"],
                       example=0 if values["ex"] is None else _int(values["ex"], "ex", 0, 100_000),
                       shown="perturbed" if values["show"] is None else _choice(values["show"], "show",
                                                                                ANSWER_SHOWN, "view"))


def _gallery(params, known: Known) -> GalleryLink:
    store = _store(params, known, required=False)
    sweeps = _names(params, "sweep", frozenset(), "sweep")
    kind, item, q = (_one(params, k) for k in ("kind", "id", "q"))
    return GalleryLink(store=store, sweeps=sweeps,
                       kind="disagree" if kind is None else _choice(kind, "kind", GALLERY_KINDS, "kind of example"),
                       item=None if item is None else _text(item, "id", MAX_NAME_CHARS),
                       question=None if q is None else _text(q, "q", MAX_QUESTION_CHARS, "question"))


# ------------------------------------------------------------------------------------ store names

def store_names(paths: Sequence[str | Path]) -> dict[str, str]:
    """Each listed sweep database's link name -> its path: the file's name, and where two listed
    databases share one, the name with a short digest of the path (which tells nothing about it).

    >>> names = store_names(["/srv/runs/sweeps.sqlite", "/srv/trials/sweeps.sqlite", "/srv/runs/x.db"])
    >>> sorted(names)
    ['sweeps-1f7f27b7.sqlite', 'sweeps-2e40f2a1.sqlite', 'x.db']
    """
    counts: dict[str, int] = {}
    for p in paths:
        counts[Path(p).name] = counts.get(Path(p).name, 0) + 1
    out: dict[str, str] = {}
    for p in paths:
        path = Path(p)
        name = path.name
        if counts[name] > 1:
            digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
            name = f"{path.stem}-{digest}{path.suffix}"
        out.setdefault(name, str(p))
    return out
