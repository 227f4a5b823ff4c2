"""``python -m core.evaluate``: the old name of ``python -m core.models.evaluate``.

Kept because a shipped model card names the old command (``assets/models/minilm-cmrc-zh/README.md``,
"Measured (python -m core.evaluate)") and users' scripts may. Code imports
:mod:`core.models.evaluate`.
"""
import sys

if __name__ == "__main__":
    from core.models.evaluate import main

    sys.exit(main())
