"""``python -m core.explain``: token attributions from the command line (:mod:`core.explain.cli`)."""
import sys

from core.explain.cli import main

if __name__ == "__main__":
    sys.exit(main())
