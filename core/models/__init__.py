"""The project's own models after training: their cards (:mod:`core.models.cards`: read, write,
render, tabulate), evaluation written into the cards (``python -m core.models.evaluate``), and
shipping a training run into ``assets/models/`` (``python -m core.models.ship``)."""
