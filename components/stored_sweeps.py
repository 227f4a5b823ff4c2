"""The Sweeps page's list of stored sweeps, with Resume for an unfinished one.

The table and the notes come from core.sweeps.running.offer (a sweep still running elsewhere, or
interrupted because its process is gone: core.sweeps.ownership.effective_status decides which).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from components.choice import keep_valid
from components.job_progress import follow
from components.text import md_escape
from core.sweeps.running import offer
from core.sweeps.running.job import running_on_this_server


def stored_sweeps(sweeps: Sequence[Mapping[str, Any]], job: Any, resume_disabled: bool,
                  db_path: Any = None, state_key: str = "sweep_job") -> Mapping[str, Any] | None:
    """The table of ``sweeps``, a picker of the unfinished ones with what to know before resuming,
    and Resume; returns the sweep to resume when Resume was pressed (None otherwise, and when every
    sweep is complete). ``job``: this session's running SweepJob, if any (its sweep is its own).
    A sweep still running on this server's thread for another session (this browser before a
    reload, another tab) is offered to follow here: its progress bar and Cancel in
    ``st.session_state[state_key]``."""
    st.dataframe(pd.DataFrame(offer.stored_rows(sweeps)), hide_index=True, width="stretch", key="sw_list")
    unfinished = offer.unfinished(sweeps)
    if not unfinished:
        st.caption("Every stored sweep is complete.")
        return None
    by_name = {s["name"]: s for s in unfinished}
    keep_valid("sw_resume_pick", list(by_name))
    c1, c2 = st.columns([3, 1])
    pick = c1.selectbox("Resume an unfinished sweep", list(by_name), key="sw_resume_pick")
    chosen = by_name[pick]
    c1.caption(md_escape(f"{chosen['status']} · {chosen['done_units']:,}/{chosen['total_units']:,} rows · "
                         f"updated {chosen['updated_at']}"))
    own = job is not None and job.running and job.name == pick   # this session's sweep, named or not
    here = None if own or db_path is None else running_on_this_server(db_path, pick)
    if here is not None:
        st.info("This sweep is running on this server (started in another tab, or on this page before it "
                "was reloaded): follow it here to see its progress and cancel it.")
        if st.button("Follow it here", key="sw_follow", disabled=job is not None and job.running):
            follow(state_key, "sw", here)
    elif note := offer.resume_note(chosen, own):
        getattr(st, note[0])(md_escape(note[1]))
    # a running sweep has its driver: a second one would be refused (core.sweeps.running.run)
    running = chosen["status"] == "running"
    return chosen if c2.button("Resume", key="sw_resume", disabled=resume_disabled or running,
                               help="It is running: it can be resumed once it stops." if running else None) else None
