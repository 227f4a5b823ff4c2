"""What a sweep database holds while another process writes it, for the kill-and-resume tests."""
from __future__ import annotations

import sqlite3
from pathlib import Path


def rows_done(db: Path) -> int:
    """Clean and perturbed result rows committed in ``db`` so far, read-only (0 before the schema)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT (SELECT COUNT(*) FROM clean_results) + (SELECT COUNT(*) FROM results)"
                                ).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
