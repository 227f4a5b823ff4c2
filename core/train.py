"""``python -m core.train``: an alias of ``python -m core.training``.

Kept because the shipped model cards (``assets/models/*/model_card.json`` and README.md, which
this project does not rewrite) and the training record in docs/MODELS.md give every stage's
command as ``python -m core.train ...``: those commands must keep reproducing the shipped models.
Code imports :mod:`core.training`.
"""
import sys

if __name__ == "__main__":
    from core.training.cli import main

    sys.exit(main())
