"""Why a model chose its span: token attributions, and how they move under a perturbation.

* :mod:`core.explain.integrated`: integrated gradients (layer integrated gradients over the
  input word embeddings, batched) of the start and end scores of the chosen span, on the torch
  weights of any registered model (BERT, MPNet, XLM-R-vocabulary BERT);
* :mod:`core.explain.run`: the app's settings and its runs on a background thread (progress per
  model, cancel, cancelled when the browser session that asked has gone);
* :mod:`core.explain.words`: sub-word tokens summed into whitespace words;
* :mod:`core.explain.align`: a clean and a perturbed text aligned by their edits, each word's
  attribution side by side, and the answer's move;
* ``python -m core.explain`` (:mod:`core.explain.cli`): the command line.
"""
from core.explain.align import AlignedWord, align_words, answer_move  # noqa: F401
from core.explain.integrated import Attribution, Cancelled, TokenScore, explain  # noqa: F401
from core.explain.words import WordScore, word_scores  # noqa: F401
