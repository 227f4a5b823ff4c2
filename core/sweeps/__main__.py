"""``python -m core.sweeps``: the sweep CLI (:mod:`core.sweeps.cli`)."""
import sys

from core.sweeps.cli import main

if __name__ == "__main__":
    sys.exit(main())
