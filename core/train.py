"""``python -m core.train``: the old name of ``python -m core.training``.

Kept because the shipped models' cards (``assets/models/*/model_card.json`` and the README.md
rendered from it) record their training commands as ``python -m core.train ...``, and those
commands must keep reproducing the models. Code imports :mod:`core.training`.
"""
import sys

if __name__ == "__main__":
    from core.training.cli import main

    sys.exit(main())
