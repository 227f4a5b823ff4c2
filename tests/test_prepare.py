"""core.qa.prepare: the ahead-of-time ONNX export ./run.sh setup runs."""
from core.qa import prepare


def test_prepares_the_models_whose_card_chooses_onnx_and_only_those():
    chosen = dict(prepare.models_to_prepare())
    # the shipped English models' cards record their fastest backend within 0.5 F1 of torch:
    # minilm-squad's is onnx-int8 (with the outlier split, -0.30 F1 on all 1,190 XQuAD-en
    # questions); the Chinese model has no comparison recorded, so it stays on torch
    assert chosen.get("minilm-squad") == "onnx-int8"
    assert "minilm-cmrc-zh" not in chosen
    assert all(backend != "torch" for backend in chosen.values())
    assert prepare.models_to_prepare(["minilm-squad"]) == [("minilm-squad", "onnx-int8")]


def test_prepare_exports_and_reports_the_backend_that_answers(capsys):
    assert prepare.main(["minilm-squad"]) == 0
    assert "[prepare] minilm-squad: onnx-int8 ready in" in capsys.readouterr().out
