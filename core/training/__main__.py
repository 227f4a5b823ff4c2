"""``python -m core.training``: fine-tune an extractive-QA model (see :mod:`core.training.cli`)."""
import sys

from core.training.cli import main

if __name__ == "__main__":
    sys.exit(main())
