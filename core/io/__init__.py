"""Reading and writing files safely: JSON that cannot exhaust memory or recursion
(:mod:`core.io.safe_json`), the SQLite base every store shares (:mod:`core.io.sqlite_db`: WAL,
explicit transactions, read-only opening), and CSV that a spreadsheet cannot execute
(:mod:`core.io.csv_export`)."""
