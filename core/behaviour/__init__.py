"""Behaviour tests for extractive QA (CheckList, Ribeiro et al. 2020): :mod:`core.behaviour.spec`
(reading and expanding a behaviour file), :mod:`core.behaviour.run` (running it against models),
:mod:`core.behaviour.card` (failure rates on a model card) and ``python -m core.behaviour`` (the
CLI, an exit status for CI). The file format: docs/BEHAVIOUR.md."""
