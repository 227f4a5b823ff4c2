"""``python -m core.evaluate``: an alias of ``python -m core.models.evaluate``.

Kept because the shipped models' READMEs (``assets/models/*/README.md``, which this project does
not rewrite) name the old command. Code imports :mod:`core.models.evaluate`.
"""
import sys

if __name__ == "__main__":
    from core.models.evaluate import main

    sys.exit(main())
