"""``python -m core.sweeps``: the sweep CLI (:mod:`core.sweeps.cli`)."""
import os
import sys

from core.sweeps.cli import main

if __name__ == "__main__":
    code = main()
    from core.sweeps.running import ray_cluster

    if ray_cluster.ever_connected():
        # A driver that has left Ray can still die in the interpreter's teardown: CI's clean
        # clone on 2026-11-27 saw SIGSEGV (exit -11) after a Ray sweep had committed every row,
        # printed its report and shut Ray down. Everything is stored and written by now, so the
        # process ends without that teardown, with the exit status it earned.
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
