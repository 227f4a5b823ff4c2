"""The app's server with a warm start: ``python -m components.server app.py [streamlit options]``.

What ``./run.sh app`` runs. Streamlit runs a page's script only when a browser opens it, so
nothing in the app can load a model before the first visitor; this launcher starts the warm start
(core.qa.warm: the first screen's models, within the model memory budget) on a background thread
of the server's own process, then hands over to ``streamlit run``. The engine cache is the
process's (core.qa.engine_cache), so the first Answer finds the models there, and says on its
output when they are (``[qax] warm start loaded 3 of 3 models in 8 s``: a presenter's cue that the
first answer will not wait). ``QAX_WARM_START=0`` serves without it.
"""
from __future__ import annotations

import os
import sys
import threading

WARM_LINE = "[qax] "   # what starts the line that says the warm start is done


def main(argv: list[str]) -> int:
    if os.environ.get("QAX_WARM_START", "1") != "0":
        from core.qa import warm

        warming = warm.start()
        threading.Thread(target=_announce, args=(warming,), name="qax-warm-announce", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv]
    return cli.main(prog_name="streamlit")


def _announce(warming) -> None:
    """Say when the loads are done (the model classes it imports after them concern no answer)."""
    import time

    while warming.finished is None and warming.thread.is_alive():
        time.sleep(0.2)
    print(WARM_LINE + warming.summary(), file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
