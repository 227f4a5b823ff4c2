"""Extractive QA: windowed features, span decoding, the batched engine, the model registry."""
from core.qa.engine import QAEngine  # noqa: F401
