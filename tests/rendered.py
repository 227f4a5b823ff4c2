"""What a reader sees of the Markdown/HTML the pages write: escapes undone.

The pages escape untrusted text (components.text: backslash escapes in Markdown, numeric
character references in HTML), so a test that looks for a name or a sentence in the raw element
value reads it through :func:`shown`.
"""
import html
import re

_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(value: str) -> str:
    """``value`` with Markdown backslash escapes, HTML character references and the word joiners
    that break autolinks undone."""
    return html.unescape(_BACKSLASH_ESCAPE.sub(r"\1", value)).replace("\u2060", "")


def open_tab(at, name: str, key: str = "hm_tabs"):
    """Show the tab ``name`` of the page's tabs ``key`` and run the page again: a page builds a
    costly tab only while it is shown (pages/heatmaps.py ``shown``), as a visitor's click does."""
    at.session_state[key] = name
    return at.run()


def container_places(at) -> dict[str, tuple[int, ...]]:
    """Each expander's and tab's place in the page, by label: the child indexes from the root down
    to it. A browser keeps an expander open, or a tab chosen, across runs only while its place
    stays the same (components.frame.run_output)."""
    places = {}

    def walk(node, path):
        if getattr(node, "type", None) in ("expander", "tab"):
            places[node.label] = path
        for i, child in getattr(node, "children", {}).items():
            walk(child, (*path, i))

    walk(at._tree, ())
    return places
