"""The app's server with a warm start: ``python -m components.server app.py [streamlit options]``.

What ``./run.sh app`` runs. Streamlit runs a page's script only when a browser opens it, so
nothing in the app can load a model before the first visitor; this launcher starts the warm start
(core.qa.warm: the first screen's models, within the model memory budget) on a background thread
of the server's own process, then hands over to ``streamlit run``. The engine cache is the
process's (core.qa.engine_cache), so the first Answer finds the models there. ``QAX_WARM_START=0``
serves without it.
"""
from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if os.environ.get("QAX_WARM_START", "1") != "0":
        from core.qa import warm

        warm.start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv]
    return cli.main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
