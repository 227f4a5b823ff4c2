"""core.links: each view's state to query parameters and back, and every way a link is refused."""
from __future__ import annotations

import pytest

from core import links
from core.links import AskLink, GalleryLink, HeatmapLink, Known, LinkError, VariantsLink, decode, parse_query

KNOWN = Known(models=frozenset({"minilm-squad", "mpnet-squad-v2"}),
              datasets=frozenset({"demo.en", "xquad/xquad.en"}),
              stores=frozenset({"sweeps.sqlite", "trial.sqlite"}))


def _round_trip(link, view):
    text = links.query_string(link)
    return text, decode(view, parse_query(text), KNOWN)


def test_each_view_round_trips_through_its_query_string():
    ask = AskLink(dataset="xquad/xquad.en", item="56beb4343aeaaa14008c925b", question=None,
                  models=("minilm-squad", "mpnet-squad-v2"), n_best=3, gold="", answer=True)
    text, back = _round_trip(ask, "ask")
    assert text == ("v=1&ds=xquad%2Fxquad.en&id=56beb4343aeaaa14008c925b&m=minilm-squad&m=mpnet-squad-v2"
                    "&nbest=3&go=1")
    assert back == ask
    pasted = AskLink(context="Maria has a cat & a truck.", question="What animal does Maria have?",
                     models=("minilm-squad",), gold="cat", answer=False)
    text, back = _round_trip(pasted, "ask")
    assert "ctx=Maria+has+a+cat+%26+a+truck." in text and "gold=cat" in text and "go=0" in text
    assert back == pasted
    var = VariantsLink(dataset="demo.en", item="demo-en-01-q2", question="How tall is the towr?",
                       models=("minilm-squad",), specs=("keyboard_Q:p=0.5", "TUQ"), chain=("TLQ", "keyboard_Q:p=0.5"),
                       seed=7, repeats=2)
    text, back = _round_trip(var, "variants")
    assert "p=keyboard_Q%3Ap%3D0.5&p=TUQ&chain=TLQ&chain=keyboard_Q%3Ap%3D0.5&seed=7&n=2" in text
    assert back == var
    typed = VariantsLink(context="Maria has a cat.", question="What animal?", models=("minilm-squad",), specs=("TUQ",),
                         gold="cat")   # a typed passage's gold answer travels, so the link reopens scored
    text, back = _round_trip(typed, "variants")
    assert "gold=cat" in text and back == typed
    cell = HeatmapLink(store="sweeps.sqlite", sweep="toy-sweep", tab="Heatmap", metric="em", model="fake-a",
                       cell="DCRQ(n_chars=1, n_words=1)", example=3, shown="clean")
    text, back = _round_trip(cell, "heatmaps")
    assert text == ("v=1&db=sweeps.sqlite&sweep=toy-sweep&tab=Heatmap&metric=em&model=fake-a"
                    "&cell=DCRQ%28n_chars%3D1%2C+n_words%3D1%29&ex=3&show=clean")
    assert back == cell
    item = GalleryLink(store="sweeps.sqlite", sweeps=("toy-sweep", "other"), kind="flip", item="q5",
                       question="Who built the palace in Würzbrg?")
    text, back = _round_trip(item, "gallery")
    assert back == item and "q=Who+built+the+palace+in+W%C3%BCrzbrg%3F" in text


def test_no_parameters_is_no_link_and_streamlits_own_are_left_alone():
    assert decode("ask", {}, KNOWN) is None
    assert decode("ask", {"embed": ["true"]}, KNOWN) is None


@pytest.mark.parametrize("view, query, message", [
    ("ask", "ds=demo.en&id=x", "link parameter v: missing"),
    ("ask", "v=2&ds=demo.en&id=x", "link parameter v: version '2' is not one this server reads"),
    ("ask", "v=1&v=1&ds=demo.en&id=x", "link parameter v: given 2 times"),
    ("ask", "v=1&ds=demo.en&id=x&evil=1", "link parameter 'evil': not one a ask link takes"),
    ("ask", "v=1&ds=squad%2F..%2F..%2Fetc%2Fpasswd&id=x", "link parameter ds: 'squad/../../etc/passwd' is not a "
                                                          "data set this server offers"),
    ("ask", "v=1&ds=demo.en", "link parameter id: missing"),
    ("ask", "v=1&ds=demo.en&id=x&ctx=hello", "link parameter ctx: a link names a data set item"),
    ("ask", "v=1&ds=demo.en&id=x&m=%3Cimg+src%3Dx%3E", "link parameter m: '<img src=x>' is not a model"),
    ("ask", "v=1&ds=demo.en&id=x&nbest=11", "link parameter nbest: 11 is outside 1–10"),
    ("ask", "v=1&ds=demo.en&id=x&nbest=-1", "link parameter nbest: '-1' is not a whole number"),
    ("ask", "v=1&ds=demo.en&id=x&go=yes", "link parameter go: 'yes' is not 0 or 1"),
    ("ask", "v=1&ctx=%20%20", "link parameter ctx: the context is empty"),
    ("ask", "v=1&ds=demo.en&id=x%00y", "link parameter id: the value holds a NUL character"),
    ("variants", "v=1&ds=demo.en&id=x&p=keyboard_Q%3Ap%3D7", "link parameter p: keyboard_Q: parameter 'p' must be"),
    ("variants", "v=1&ds=demo.en&id=x&p=keyboard_Q%3Azzz%3D1", "link parameter p: keyboard_Q: unknown parameter"),
    ("variants", "v=1&ds=demo.en&id=x&p=file%3A%2Fetc%2Fpasswd", "link parameter p: 'file:/etc/passwd' is not one"),
    ("variants", "v=1&ds=demo.en&id=x&p=TUQ%2BTLQ", "link parameter p: 'TUQ+TLQ' is not one perturbation"),
    ("variants", "v=1&ds=demo.en&id=x&chain=nope", "link parameter chain: 'nope' is not one perturbation"),
    ("variants", "v=1&ds=demo.en&id=x&chain=keyboard_Q%3Ap%3D2", "link parameter chain: keyboard_Q: parameter 'p'"),
    ("variants", "v=1&ds=demo.en&id=x&seed=99999999999", "link parameter seed: '99999999999' is not a whole"),
    ("variants", "v=1&ds=demo.en&id=x&n=51", "link parameter n: 51 is outside 1–50"),
    ("heatmaps", "v=1&db=..%2F..%2Fetc%2Fpasswd&sweep=s", "link parameter db: '../../etc/passwd' is a path"),
    ("heatmaps", "v=1&db=%2Fsrv%2Fruns%2Fsweeps.sqlite&sweep=s", "link parameter db: '/srv/runs/sweeps.sqlite' is a"),
    ("heatmaps", "v=1&db=.hidden.sqlite&sweep=s", "link parameter db: '.hidden.sqlite' is a path"),
    ("heatmaps", "v=1&db=other.sqlite&sweep=s", "link parameter db: 'other.sqlite' is not a sweep database"),
    ("heatmaps", "v=1&db=sweeps.sqlite", "link parameter sweep: missing"),
    ("heatmaps", "v=1&db=sweeps.sqlite&sweep=s&model=a", "link parameter cell: missing"),
    ("heatmaps", "v=1&db=sweeps.sqlite&sweep=s&metric=bleu", "link parameter metric: 'bleu' is not a metric"),
    ("gallery", "v=1&kind=%3Cscript%3E", "link parameter kind: '<script>' is not a kind of example"),
])
def test_bad_links_are_refused_naming_the_parameter(view, query, message):
    with pytest.raises(LinkError) as e:
        decode(view, parse_query(query), KNOWN)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_huge_values_are_refused_before_any_work():
    huge = "x" * 9_000
    with pytest.raises(LinkError, match="the link's parameters are 9,0[0-9][0-9] characters; a link may carry "
                                        "at most 8,000"):
        decode("ask", {"v": ["1"], "ctx": [huge]}, KNOWN)
    with pytest.raises(LinkError, match="link parameter ctx: 2,001 characters; the most a link may carry is 2,000"):
        decode("ask", {"v": ["1"], "ctx": ["y" * 2_001]}, KNOWN)
    with pytest.raises(LinkError, match="link parameter m: 21 values; a link carries at most 20"):
        decode("ask", {"v": ["1"], "ds": ["demo.en"], "id": ["x"], "m": ["minilm-squad"] * 21}, KNOWN)
    # parse_query stops at 200 fields: a query of a million parameters is never expanded
    with pytest.raises(ValueError):
        parse_query("&".join(["m=a"] * 201))


def test_state_too_long_to_link_says_why():
    assert links.too_long_to_link("c" * 2_000, "q" * 500) is None
    assert links.too_long_to_link(None, "q" * 501) == "the question is 501 characters; a link carries at most 500"


def test_store_names_are_file_names_and_never_folders():
    names = links.store_names(["/srv/qax/runs/sweeps.sqlite", "/srv/qax/.cache/trials/trial.sqlite"])
    assert names == {"sweeps.sqlite": "/srv/qax/runs/sweeps.sqlite",
                     "trial.sqlite": "/srv/qax/.cache/trials/trial.sqlite"}
    twins = links.store_names(["/a/sweeps.sqlite", "/b/sweeps.sqlite"])
    assert all("/" not in n and n.startswith("sweeps-") and n.endswith(".sqlite") for n in twins)
    assert sorted(twins.values()) == ["/a/sweeps.sqlite", "/b/sweeps.sqlite"]
