"""Machine translation: :mod:`core.translate.translators` (the Translator interface and its
Apertium, seq2seq and mapping backends), :mod:`core.translate.languages` (language names) and
``python -m core.translate.natural_mt`` (natural questions machine-translated)."""
