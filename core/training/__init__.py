"""Training QA models: ``python -m core.training``.

:mod:`~core.training.cli` (the argument table -> :class:`~core.training.config.TrainConfig`),
:mod:`~core.training.train` (the run: data, windows, the loop, checkpoints, the log),
:mod:`~core.training.augment` (noise augmentation), :mod:`~core.training.lora` (LoRA adapters),
:mod:`~core.training.distill` (consistency distillation), :mod:`~core.training.vocab`
(vocabulary extension). Shipping a run and its card: :mod:`core.models`.
"""
