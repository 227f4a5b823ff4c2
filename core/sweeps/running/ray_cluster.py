"""Joining or starting the Ray a sweep runs on (core.sweeps.running.ray runs it there): one
connection a process, the environment its workers get, and leaving.

A process joins one Ray: the cluster at an address, or a local one it starts. Every worker gets
the driver's QAX_*, HF_*, TRANSFORMERS_* and TOKENIZERS_* variables and the checkout on its
PYTHONPATH (docs/RAY.md).
"""
from __future__ import annotations

import os
from typing import Any

from core.config import repo_root
from core.sweeps.config import SweepError

__all__ = ["RAY_ADDRESS_ENV", "RECONNECT_ENV", "OUTLIVE_CLUSTER_S", "connect", "connected_to", "disconnect",
           "ever_connected"]

RAY_ADDRESS_ENV = "QAX_RAY_ADDRESS"   # the cluster the app's Sweeps page may use (a server setting)
_ENV_PREFIXES = ("QAX_", "HF_", "TRANSFORMERS_", "TOKENIZERS_")
_connected_to: str | None = None      # what connect() joined: an address, or "local"
_ever_connected = False


def _worker_env() -> dict[str, str]:
    """Environment for every Ray worker: the project on PYTHONPATH, the driver's settings."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    paths = [str(repo_root())] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


# Ray's driver exits its whole process when it cannot reach the cluster's GCS for this many seconds
# (default 60): a `ray stop` anywhere on the machine, or a lost head node. In the app the driver
# is the Streamlit server, so every visitor's session died with it (found by a browser audit: a
# local Ray's GCS killed at 04:21, the server gone at 04:22). A process that must outlive its
# cluster sets it this high; its sweep then ends in an error or a Cancel, not in an exit.
RECONNECT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
METRICS_ENV = "RAY_enable_metrics_collection"
OUTLIVE_CLUSTER_S = 10**8


def connect(address: str | None = None, *, num_cpus: int | None = None, outlive_cluster: bool = False):
    """The ``ray`` module, initialised: joined to the cluster at ``address``, or a local Ray with
    ``num_cpus`` (default: this machine's CPUs). A Ray already initialised in this process (a
    previous sweep of the app, a test) is reused as it is. Raises SweepError when Ray is missing
    or the cluster cannot be reached. ``outlive_cluster``: this process (the app's server) must
    not exit when the cluster goes away (see RECONNECT_ENV); a value the user set is kept."""
    try:
        import ray
    except ImportError:
        raise SweepError("the Ray backend needs the 'ray' package (pip install -r requirements.txt)") from None
    global _connected_to, _ever_connected
    wanted = address or "local"
    if ray.is_initialized():
        if _connected_to is not None and _connected_to != wanted:
            raise SweepError(f"this process is connected to {_connected_to} Ray; a sweep on {wanted} Ray needs "
                             "a fresh process (restart the app or run python -m core.sweeps)")
        return ray
    import logging

    if outlive_cluster:  # read by Ray's core worker when ray.init starts it, so before that
        os.environ.setdefault(RECONNECT_ENV, str(OUTLIVE_CLUSTER_S))
    # Ray's metrics exporter is a thread of the driver's core worker, read by nothing here (no
    # dashboard). A CLI driver died of SIGSEGV after its sweep, with Ray's shutdown logged as
    # complete (CI on 2026-11-27, twice; never in a dozen runs here): one thread fewer
    # that can outlive the shutdown (ray-project/ray#36885 is a crash of that exporter there).
    os.environ.setdefault(METRICS_ENV, "0")
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                                  runtime_env={"env_vars": _worker_env()}, namespace="qax")
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise SweepError(f"could not start or join {where}: {e}") from None
    _connected_to, _ever_connected = wanted, True
    return ray


def connected_to() -> str | None:
    """What this process's Ray is joined to through :func:`connect` (an address, or "local"), or None."""
    return _connected_to


def ever_connected() -> bool:
    """Whether this process has joined or started a Ray (even one it has left since)."""
    return _ever_connected


def disconnect() -> None:
    """Leave Ray (stopping the local one this process started)."""
    global _connected_to
    import ray

    ray.shutdown()
    _connected_to = None
