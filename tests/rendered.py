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
