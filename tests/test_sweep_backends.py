"""A stored sweep resumes with the backend it was made with (core.sweeps.running.backends): the default
backend may have changed since (the model card's choice), and a non-torch backend is part of the
prediction cache key, so resuming with another would be another configuration."""
import pytest

from core.datasets import demo_dataset
from core.perturb.spec import parse_specs
from core.qa import registry
from core.qa.engine import EngineSettings
from core.sweeps.config import SweepConfig, SweepError
from core.sweeps.running.backends import backend_for, engines_as_stored, stored_fingerprints
from core.sweeps.running.run import run_sweep

pytest.importorskip("onnxruntime")


@pytest.fixture
def load(tiny_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))

    def engine(backend):
        return registry.load_engine("tiny-a", EngineSettings(threads=1, backend=backend), path=tiny_registry)

    return engine


def test_a_stored_torch_sweep_resumes_with_torch_when_the_default_is_onnx(load, tmp_path):
    db, data = tmp_path / "s.sqlite", demo_dataset("en")
    config = SweepConfig("demo.en", parse_specs("TLQ"), ["tiny-a"], sample=4, name="before")
    made = run_sweep(config, {"tiny-a": load("torch")}, db, dataset=data)
    assert made.status == "done"
    stored = stored_fingerprints(db, "before")
    assert stored == {"tiny-a": load("torch").fingerprint()}

    onnx = load("onnx")  # what the default now gives
    assert onnx.backend_name == "onnx" and onnx.fingerprint() != stored["tiny-a"]
    with pytest.raises(SweepError, match="different configuration"):
        run_sweep(config, {"tiny-a": onnx}, db, dataset=data)  # what resuming naively would do
    assert backend_for(onnx, stored["tiny-a"]) == "torch"
    engines, switched = engines_as_stored({"tiny-a": onnx}, stored, lambda m, b: load(b))
    assert switched == {"tiny-a": "torch"} and engines["tiny-a"].backend_name == "torch"
    again = run_sweep(config, engines, db, dataset=data)
    assert again.resumed_units == made.total_units and again.predictions_computed == 0

    # a new sweep (no stored one under its name) keeps the backend it was given
    fresh = SweepConfig("demo.en", parse_specs("TLQ"), ["tiny-a"], sample=4, name="after")
    assert stored_fingerprints(db, "after") == {}
    assert engines_as_stored({"tiny-a": onnx}, {}, lambda m, b: load(b)) == ({"tiny-a": onnx}, {})
    new = run_sweep(fresh, {"tiny-a": onnx}, db, dataset=data)
    assert new.predictions_cached == 0  # torch's stored answers are never served for onnx
    assert stored_fingerprints(db, "after") == {"tiny-a": onnx.fingerprint()}


def test_the_cli_resumes_a_named_sweep_with_its_backend(load, tiny_registry, tmp_path, monkeypatch, capsys):
    from core.sweeps.cli import main

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    db = tmp_path / "cli.sqlite"
    argv = ["--dataset", "demo.en", "--perturbations", "TLQ", "--models", "tiny-a", "--sample", "3",
            "--name", "kept", "--db", str(db), "--quiet", "--threads", "1"]
    assert main([*argv, "--engine-backend", "onnx"]) == 0
    made = stored_fingerprints(db, "kept")
    capsys.readouterr()
    # later, without --engine-backend (the default: torch for the card-less tiny model)
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "tiny-a: resuming kept with the onnx backend it was made with" in err
    assert stored_fingerprints(db, "kept") == made
