"""core.qa.prepare: the ahead-of-time ONNX export ./run.sh setup runs."""
from core.qa import prepare


def test_prepares_the_models_whose_card_chooses_onnx_and_only_those():
    chosen = dict(prepare.models_to_prepare())
    # the shipped English models' cards record onnx (identical spans, faster); the Chinese model
    # has no comparison recorded, so it stays on torch and needs no export
    assert chosen.get("minilm-squad") == "onnx"
    assert "minilm-cmrc-zh" not in chosen
    assert all(backend != "torch" for backend in chosen.values())
    assert prepare.models_to_prepare(["minilm-squad"]) == [("minilm-squad", "onnx")]


def test_prepare_exports_and_reports_the_backend_that_answers(capsys):
    assert prepare.main(["minilm-squad"]) == 0
    assert "[prepare] minilm-squad: onnx ready in" in capsys.readouterr().out
