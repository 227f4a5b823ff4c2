"""A random token per browser, kept in a cookie: who is "the same visitor" on Beat the AI.

Streamlit (1.67) has no API to *write* browser storage, but it reads the cookies of the page's
request (``st.context.cookies``, read-only). So:

1. On a session's first run, the token is the cookie :data:`core.collect.identity.TOKEN_COOKIE` when the
   browser sent a well-formed one (a cookie is visitor input: :func:`core.collect.identity.valid_token`).
2. Otherwise a fresh token is drawn for this session, and a tiny ``st.iframe`` snippet (a
   same-origin iframe that may run our own constant script) stores it in that cookie (one year,
   ``SameSite=Strict``, ``Secure`` over https), unless the browser already has one (another
   tab set it first). The next page load sends it, so the same browser keeps the same token
   across reloads and tabs.

Why a cookie and not ``localStorage`` or the query string: a cookie is sent with the request
Streamlit already reads, so no round trip through a custom component is needed to get the value
back to Python (``st.html`` does not run scripts unless told to, and then in the page itself);
a token in the URL would be shared with every link a visitor pastes.
Without a browser (AppTest) or with cookies blocked, the token lives as long as the session.
It is an identity for fairness, not authentication (core/collect/identity.py says what it stops).
"""
from __future__ import annotations

import streamlit as st

from core.collect import identity

__all__ = ["browser_token"]

_STATE = "browser_token"

# The cookie is only written when absent, so the first tab's token wins for the whole browser.
_SCRIPT = """<script>
(function () {
  var name = "%(name)s", token = "%(token)s";
  var doc = document;
  try { doc.cookie; } catch (e) { doc = window.parent.document; }
  var has = doc.cookie.split(";").some(function (c) { return c.trim().indexOf(name + "=") === 0; });
  if (!has) {
    doc.cookie = name + "=" + token + "; max-age=31536000; path=/; SameSite=Strict"
      + (location.protocol === "https:" ? "; Secure" : "");
  }
})();
</script>"""


def _cookie_token() -> str | None:
    try:
        cookies = st.context.cookies
    except Exception:  # no request behind this run (AppTest, bare mode)
        return None
    return identity.valid_token(cookies.get(identity.TOKEN_COOKIE)) if cookies else None


def browser_token() -> str:
    """This browser's token (see the module docstring); writes the cookie when it is new."""
    s = st.session_state
    if _STATE not in s:
        from_cookie = _cookie_token()
        s[_STATE] = (from_cookie or identity.new_token(), from_cookie is not None)
    token, from_cookie = s[_STATE]
    if not from_cookie:
        # The token was validated or drawn here: 32 hex digits, safe inside the script.
        st.iframe(_SCRIPT % {"name": identity.TOKEN_COOKIE, "token": token}, height=1)
    return token
