"""The app's navigation: every page's address is its file name.

Streamlit still discovers ``pages/*.py`` by file name and serves the first request to a page's
address from that list before app.py's ``st.navigation`` runs. An address that differs from
the file name (``/beat`` for ``beat_the_ai.py``) therefore popped up "Page not found" on the first
visit after a server start, over the right page: a bad first sight in a live demo.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pages() -> list[dict]:
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page"
                and isinstance(node.args[0], ast.Constant)):   # a file page, not a function page
            kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            pages.append({"file": ast.literal_eval(node.args[0]), **kw})
    return pages


def test_every_page_address_is_its_file_name():
    pages = _pages()
    assert len(pages) == 9
    for p in pages:   # the default page is served at "/" (and /ask opens it: app.py)
        assert p.get("default") or p["url_path"] == Path(p["file"]).stem, p


def test_every_page_file_is_in_the_navigation():
    listed = {Path(p["file"]).name for p in _pages()}
    assert listed == {f.name for f in (ROOT / "pages").glob("*.py")}
