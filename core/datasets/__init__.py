"""Extractive-QA data sets: reading (``squad``), pairing challenge sets (``pairing``), and data sets
as files (``files``: the data directory, the demo set, data sets by name, the seeded sample).

Every name is importable from ``core.datasets`` itself, as before it became a package.
"""
from core.datasets.files import (
    DEMO_PATH,
    EVAL_ONLY,
    FILE_PREFIX,
    TRAINABLE_EVAL,
    XQUAD_PARAGRAPHS,
    DatasetInfo,
    confined_file,
    dataset_file,
    demo_dataset,
    discover_datasets,
    eval_contexts,
    find_eval_overlap,
    has_gold,
    load_dataset,
    load_demo,
    normalize_context,
    resolve_data_file,
    sample_examples,
    squad_dev_minus_xquad,
    trainable_eval_files,
)
from core.datasets.pairing import (
    CONTEXT_SIMILARITY,
    PAIR_RULES,
    Pairing,
    contexts_agree,
    disagreement,
    legacy_rule,
    pair_challenge,
)
from core.datasets.squad import (
    FORMATS,
    ON_AMBIGUOUS,
    ON_UNSCORABLE,
    Dataset,
    DatasetError,
    data_name,
    load_squad,
    nearest_occurrence,
)

__all__ = [
    "DatasetError", "Dataset", "Pairing", "DatasetInfo", "EVAL_ONLY", "TRAINABLE_EVAL",
    "load_squad", "pair_challenge", "discover_datasets",
    "ON_AMBIGUOUS", "ON_UNSCORABLE", "data_name",
    "PAIR_RULES", "FORMATS", "contexts_agree", "disagreement", "nearest_occurrence",
    "normalize_context", "trainable_eval_files", "eval_contexts", "find_eval_overlap", "squad_dev_minus_xquad",
    "load_demo", "demo_dataset", "DEMO_PATH", "FILE_PREFIX", "XQUAD_PARAGRAPHS", "CONTEXT_SIMILARITY",
    "legacy_rule", "has_gold", "resolve_data_file", "load_dataset", "dataset_file", "confined_file", "sample_examples",
]
