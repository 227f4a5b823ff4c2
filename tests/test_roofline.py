"""The hardware accounting of issue 47 (core.qa.roofline): FLOPs from a model's shapes, the peak
from the CPU's flags, cores and clock, and benchmarks/qa_throughput.py's --backends refusal."""
import doctest
from types import SimpleNamespace

import pytest

from core.qa import roofline

XEON_AMX = """vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
cpu MHz\t\t: 2000.000
flags\t\t: fpu fma avx2 avx512f avx512_bf16 avx512_vnni amx_bf16 amx_tile amx_int8
"""
ZEN4 = """vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
cpu MHz\t\t: 2596.142
flags\t\t: fpu fma avx2 avx512f avx512_bf16 avx512_vnni
"""


def test_doctests():
    result = doctest.testmod(roofline)
    assert result.attempted >= 5 and result.failed == 0


def test_mpnet_base_needs_about_71_gflop_per_384_token_window():
    """Issue 47's figure for MPNet-base (12 layers, hidden 768, FFN 3072): per layer 1,811,939,328
    (projections) + 3,623,878,656 (FFN) + 452,984,832 (attention) = 5,888,802,816; x 12, plus the
    QA head's 1,179,648."""
    mpnet = SimpleNamespace(num_hidden_layers=12, hidden_size=768, intermediate_size=3072)
    assert roofline.window_flops(mpnet, 384) == 12 * 5_888_802_816 + 1_179_648 == 70_666_813_440


def test_an_amx_xeon_peaks_at_1024_bf16_operations_per_cycle_and_core(monkeypatch):
    monkeypatch.setattr(roofline.os, "sched_getaffinity", lambda pid: {0, 1})
    peak = roofline.detect_peak(XEON_AMX, "CPU max MHz:                        3800.0000\n")
    assert (peak.isa, peak.cores, peak.ghz, peak.clock_source) == ("amx", 2, 3.8, "lscpu CPU max MHz")
    assert peak.gflops("bf16") == pytest.approx(2 * 3.8 * 1024)
    assert peak.gflops("int8") == pytest.approx(2 * 3.8 * 2048)
    assert peak.gflops("fp32") == pytest.approx(2 * 3.8 * 64)


def test_zen4_runs_avx512_on_a_256_bit_datapath_at_its_reported_clock(monkeypatch):
    monkeypatch.setattr(roofline.os, "sched_getaffinity", lambda pid: {0, 1})
    peak = roofline.detect_peak(ZEN4, "CPU(s): 2\n")  # a VM's lscpu without a max clock
    assert (peak.isa, peak.clock_source) == ("avx512 (256-bit datapath)", "cpuinfo cpu MHz")
    assert peak.gflops("fp32") == pytest.approx(2 * 2.596142 * 32)
    assert peak.gflops("int8") == pytest.approx(2 * 2.596142 * 128)


def test_every_backend_has_a_precision():
    from core.qa.backends.selection import BACKENDS

    assert set(roofline.BACKEND_PRECISION) == set(BACKENDS)


@pytest.mark.parametrize("value", ["tensorrt", "openvino,ONNX"])
def test_the_benchmark_refuses_an_unknown_backend_in_one_line(value, capsys):
    from benchmarks import qa_throughput

    assert qa_throughput.main(["--compare-backends", "--backends", value]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--backends:" in err and "is not one of torch, torch-bf16" in err


@pytest.mark.needs_data("xquad/xquad.en.json")
def test_compare_backends_reports_the_flops_answered_and_each_backends_share_of_peak(
        tiny_registry, tmp_path, monkeypatch, capsys):
    """On the tiny model and 4 XQuAD-en questions: the FLOPs answered are those of the engine's own
    windows, and each share is the GFLOP/s over the peak of the backend's precision."""
    import json

    from benchmarks import qa_throughput
    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.engine import EngineSettings
    from core.qa.features import build_windows

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out.json"
    assert qa_throughput.main(["--model", "tiny-a", "--compare-backends", "--backends", "torch", "--n", "4",
                               "--threads", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    eng = registry.load_engine("tiny-a", EngineSettings(threads=1))
    ex = load_dataset("xquad/xquad.en").examples[:4]
    windows = build_windows(eng.tokenizer, [e.question for e in ex], [e.context for e in ex],
                            max_length=eng.settings.max_length, stride=eng.settings.stride)
    flops = sum(roofline.window_flops(eng.model.config, len(w.input_ids)) for w in windows)
    assert result["roofline"]["gflop_answered"] == round(flops / 1e9, 1)
    torch_row = result["backends"]["torch"]
    assert torch_row["precision"] == "fp32"
    peak = roofline.detect_peak()
    wall_s = 4 / torch_row["questions_per_second"]
    assert torch_row["share_of_peak"] == pytest.approx(flops / wall_s / 1e9 / peak.gflops("fp32"),
                                                      rel=0.02, abs=1e-4)  # both rounded in the JSON
    assert "GFLOP/s = " in capsys.readouterr().out


def test_the_measured_peak_times_real_products_and_keeps_the_best(tmp_path, monkeypatch):
    """benchmarks/peak.py's core on two small shapes: every installed int8 and fp32 runtime is timed
    (ONNX Runtime at least), each rate is 2 M K N over the time, and the attainable rate is the best;
    the record is read back for a backend's share."""
    from core.qa import measured_peak

    shapes = [(64, 32, 48), (64, 48, 32)]
    rates = measured_peak.measure(shapes, threads=1, precisions=["fp32", "int8"], repeats=1, min_seconds=0.01)
    runtimes = {(r.precision, r.runtime) for r in rates}
    assert ("fp32", "onnxruntime") in runtimes and any(p == "int8" and "onnxruntime" in rt for p, rt in runtimes)
    for r in rates:
        assert abs(r.gops - 2 * r.m * r.k * r.n / (r.ms / 1000) / 1e9) <= 0.05 * r.gops + 0.1
    best = measured_peak.attainable(rates)
    assert best["int8"]["gops"] == max(r.gops for r in rates if r.precision == "int8")
    monkeypatch.setenv("QAX_CACHE_DIR", str(tmp_path))
    record = measured_peak.record(rates, 1)
    measured_peak.default_path().write_text(__import__("json").dumps(record))
    assert measured_peak.share(best["fp32"]["gops"] / 2, "fp32", measured_peak.load()) == 0.5
    assert measured_peak.share(1.0, "bf16", measured_peak.load()) is None   # not measured
