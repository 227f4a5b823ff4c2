"""core.collect.trials: natural ASR trials (recordings kept on disk, crash repair, transcripts, challenge sets).

Speech is made with flite's kal16 voice and transcribed with PocketSphinx (exact transcripts
measured with flite 2.2 and pocketsphinx 5.1.1; whisper is left out to keep the CPU free).
"""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.collect import trial_sets, trials
from core.datasets import Dataset, load_squad, sample_examples
from core.speech import tts
from core.speech.audio import AudioError, to_wav_bytes
from core.sweeps.analysis.sweep_cells import cells
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import Answer, Prediction, QAExample, Span

ROOT = Path(__file__).resolve().parents[1]
CTX = ("The Eiffel tower in Paris, the capital of France, was built by Gustave Eiffel's company "
       "and completed in 1889.")
QUESTIONS = {"q1": ("What is the capital of France?", "Paris"),
             "q2": ("Who built the Eiffel tower?", "Gustave Eiffel"),
             "q3": ("When was the tower completed?", "1889"),
             "q4": ("Where is the tower?", "Paris")}


def dataset() -> Dataset:
    return Dataset("toy.en", "en", [QAExample(id=q, question=text, context=CTX, answers=(Answer(a, CTX.index(a)),),
                                              title="Eiffel", lang="en") for q, (text, a) in QUESTIONS.items()])


@pytest.fixture(scope="module")
def wavs() -> dict[str, bytes]:
    """Each question spoken by flite kal16, as WAV bytes."""
    out = {}
    for qid, (text, _) in QUESTIONS.items():
        samples, rate = tts.synthesize(text, "flite:kal16")
        out[qid] = to_wav_bytes(samples, rate)
    return out


def new_trial(tmp_path, n=4, label="Ana María", trial_id=None) -> trials.Trial:
    speaker = trials.Speaker(label, accent="Galician Spanish", microphone="laptop built-in")
    return trials.create_trial(speaker, dataset(), n, seed=0, root=tmp_path, trial_id=trial_id)


# ------------------------------------------------------------------------------------ creation


def test_create_samples_with_the_sweep_sampler_and_writes_metadata(tmp_path):
    trial = new_trial(tmp_path, n=2, trial_id="ana")
    expected = sample_examples(dataset().examples, 2, 0)
    assert [ex.id for ex in trial.examples] == [ex.id for ex in expected]
    meta = json.loads((tmp_path / "ana" / "trial.json").read_text())
    assert meta["speaker"] == {"label": "Ana María", "accent": "Galician Spanish",
                               "microphone": "laptop built-in", "notes": ""}
    assert meta["dataset"] == "toy.en" and meta["lang"] == "en" and meta["seed"] == 0 and meta["n"] == 2
    assert meta["examples"][0]["context"] == CTX                     # self-contained: no data dir needed later
    again = new_trial(tmp_path, n=2, trial_id="ana")                 # the id is taken: a suffix is added
    assert again.id == "ana-2"
    assert sorted(t.id for t in trials.list_trials(tmp_path)) == ["ana", "ana-2"]


def test_default_id_is_the_speaker_slug_and_bad_input_is_refused(tmp_path):
    trial = new_trial(tmp_path, n=1)
    assert trial.id.startswith("ana-mar-a-")
    with pytest.raises(trials.TrialError, match="speaker label"):
        trials.create_trial(trials.Speaker("  "), dataset(), 2, 0, root=tmp_path)
    with pytest.raises(trials.TrialError, match="at least one question"):
        trials.create_trial(trials.Speaker("x"), dataset(), 0, 0, root=tmp_path)
    with pytest.raises(trials.TrialError, match="no trial 'absent'"):
        trials.open_trial("absent", tmp_path)
    with pytest.raises(trials.TrialError, match="not in trial"):
        trial.add_recording("nope", b"")


# ----------------------------------------------------------------------------------- recording


def test_recordings_are_kept_exactly_and_rerecording_adds_attempts(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    rec = trial.add_recording("q1", wavs["q1"])
    assert (rec.qid, rec.attempt) == ("q1", 1)
    assert rec.path == tmp_path / "t" / "recordings" / "q1" / "001.wav"
    assert rec.path.read_bytes() == wavs["q1"]
    assert rec.seconds == pytest.approx(1.805, abs=0.01) and rec.sample_rate == 16000
    sidecar = json.loads(rec.path.with_suffix(".json").read_text())
    assert sidecar["qid"] == "q1" and sidecar["attempt"] == 1 and sidecar["speaker"] == "Ana María"
    assert trial.add_recording("q1", wavs["q1"]) == rec              # a rerun: same bytes, same attempt
    second = trial.add_recording("q1", wavs["q2"])                   # re-recorded
    assert second.attempt == 2 and [r.attempt for r in trial.recordings("q1")] == [1, 2]
    assert trial.states()[0].latest == second


def test_bad_audio_is_refused_and_not_stored(tmp_path):
    trial = new_trial(tmp_path, trial_id="t")
    with pytest.raises(AudioError, match="empty audio"):
        trial.add_recording("q1", b"")
    with pytest.raises(AudioError, match="not a readable audio file"):
        trial.add_recording("q1", b"RIFF....WAVEfmt nonsense")
    with pytest.raises(AudioError, match="silent"):
        trial.add_recording("q1", to_wav_bytes(np.zeros(16000, dtype=np.float32), 16000))
    assert trial.recordings() == [] and not any((tmp_path / "t" / "recordings").rglob("*.wav"))


def test_skip_next_and_resume(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    ids = [ex.id for ex in trial.examples]
    assert trial.next_index() == 0
    trial.add_recording(ids[0], wavs[ids[0]])
    trial.skip(ids[1])
    assert trial.next_index() == 2 and trial.next_index(after=2) == 3
    assert trial.progress() == {"questions": 4, "recorded": 1, "skipped": 1, "attempts": 1}
    resumed = trials.open_trial("t", tmp_path)                       # stop, come back later
    assert resumed.next_index() == 2 and resumed.skipped() == {ids[1]}
    resumed.add_recording(ids[1], wavs[ids[1]])                      # recording a skipped question un-skips it
    assert resumed.skipped() == set()
    for qid in ids[2:]:
        resumed.add_recording(qid, wavs[qid])
    assert resumed.next_index() is None


# -------------------------------------------------------------------------------- crash repair


def test_repair_after_interrupted_writes_and_deletions(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    folder = tmp_path / "t" / "recordings"
    # Crash after the WAV was written, before its metadata and index row.
    (folder / "q2").mkdir(parents=True)
    (folder / "q2" / "001.wav").write_bytes(wavs["q2"])
    # Crash inside a write: a temporary file left behind.
    (folder / "q2" / "002.wav.tmp-123").write_bytes(b"partial")
    # Crash in a deletion after the WAV went: metadata and index row remain.
    gone = trial.add_recording("q3", wavs["q3"])
    gone.path.unlink()
    reopened = trials.open_trial("t", tmp_path)                      # opening repairs
    assert [(r.qid, r.attempt) for r in reopened.recordings()] == [("q2", 1)]
    assert json.loads((folder / "q2" / "001.json").read_text())["sha256"] == hashlib.sha256(wavs["q2"]).hexdigest()
    assert not (folder / "q2" / "002.wav.tmp-123").exists() and not gone.path.with_suffix(".json").exists()
    assert reopened.repair() == {"recovered": 0, "dropped": 0, "removed": 0}   # nothing left to do


def test_recording_survives_a_kill_before_it_is_indexed(tmp_path, wavs):
    """A process killed (SIGKILL) right after writing the audio, before the index: nothing is lost."""
    new_trial(tmp_path, trial_id="t")
    wav = tmp_path / "q1.wav"
    wav.write_bytes(wavs["q1"])
    child = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from core.collect import trials
        trial = trials.open_trial("t", {str(tmp_path)!r})
        index = trial._index
        def index_or_die(**kwargs):
            # Killed at the first database access after the audio is on disk: the index step.
            if (trial.recordings_dir / "q1" / "001.wav").exists():
                os.kill(os.getpid(), signal.SIGKILL)
            return index(**kwargs)
        trial._index = index_or_die
        trial.add_recording("q1", Path({str(wav)!r}).read_bytes())
    """)
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-500:]
    trial = trials.open_trial("t", tmp_path)
    [rec] = trial.recordings()
    assert (rec.qid, rec.attempt) == ("q1", 1) and rec.path.read_bytes() == wavs["q1"]


# ------------------------------------------------------------------ transcripts, challenge sets


def test_transcribe_store_and_reuse(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    rec = trial.add_recording("q3", wavs["q3"])
    out = trial.transcribe(rec, ["pocketsphinx"])
    assert out["pocketsphinx"].text == "when was that our completed"
    assert trial.transcribe(rec, ["pocketsphinx"])["pocketsphinx"] == out["pocketsphinx"]   # reused, not redone
    [state] = [s for s in trial.states() if s.example.id == "q3"]
    assert state.transcripts["pocketsphinx"].text == "when was that our completed"
    assert "unknown ASR engine 'kaldi'" in trial.transcribe(rec, ["kaldi"])["kaldi"]


def test_transcribe_pending_after_a_crash(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    trial.add_recording("q1", wavs["q1"])                            # recorded, never transcribed
    assert trial.transcribe_pending(["pocketsphinx"]) == 1
    assert trial.transcribe_pending(["pocketsphinx"]) == 0


def test_engine_language_problem(tmp_path):
    es = Dataset("toy.es", "es", [QAExample("e1", "¿Dónde está la torre?", "La torre está en París.",
                                            (Answer("París", 17),), lang="es")])
    trial = trials.create_trial(trials.Speaker("Luis"), es, 1, 0, root=tmp_path)
    assert trial.engine_problem("pocketsphinx") == "pocketsphinx recognises en only, not Spanish"


class FakeEngine:
    """Answers only questions it knows word for word (so ASR errors cost it the answer)."""

    fingerprint = "fake-trial"
    known = {"what is the capital of france": "Paris", "when was the tower completed": "1889",
             "What is the capital of France?": "Paris", "When was the tower completed?": "1889"}

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        out = []
        for q, c in zip(questions, contexts):
            a = self.known.get(q)
            out.append(Prediction([Span(a, c.index(a), c.index(a) + len(a), 1.0)]) if a else Prediction())
        return out


def test_challenge_sets_wer_and_a_sweep_over_them(tmp_path, wavs, monkeypatch):
    monkeypatch.setenv("QAX_EXTRA_ROOTS", str(tmp_path))   # file: specs are read only inside the roots
    trial = new_trial(tmp_path, trial_id="t")
    for qid in ("q1", "q3"):
        trial.transcribe(trial.add_recording(qid, wavs[qid]), ["pocketsphinx"])
    trial.skip("q2")
    challenge = trial_sets.challenge_set(trial, "pocketsphinx")
    assert [(e.id, e.question, e.context) for e in challenge.examples] == [
        ("q1", "what is the capital of france", CTX), ("q3", "when was that our completed", CTX)]
    with pytest.raises(trials.TrialError, match="no transcript by whisper-base"):
        trial_sets.challenge_set(trial, "whisper-base")

    # WER: q1 perfect; q3 "the tower" -> "that our": 2 substitutions; corpus 2 / (6 + 5) words.
    [row] = trial_sets.wer_summary(trial)
    assert (row["speaker"], row["engine"], row["n"]) == ("Ana María", "pocketsphinx", 2)
    assert row["wer"] == pytest.approx(100 * 2 / 11)
    assert trial_sets.speaker_wer([trial]) == [{"speaker": "Ana María", "engine": "pocketsphinx", "n": 2,
                                            "wer": pytest.approx(100 * 2 / 11), "cer": row["cer"]}]

    paths = trial_sets.write_challenge_sets(trial)
    assert set(paths) == {"original", "pocketsphinx"}
    assert [e.question for e in load_squad(paths["pocketsphinx"]).examples] == \
        ["what is the capital of france", "when was that our completed"]
    command = trial_sets.sweep_command(trial, paths)
    assert f"--dataset {paths['original']} --perturbations file:{paths['pocketsphinx']}" in command

    # The sweep reads the set as file:<path>, paired by id: the per-speaker F1 (NoiseQA Table 10).
    config = SweepConfig(str(paths["original"]), [f"file:{paths['pocketsphinx']}"], ["fake"])
    run = run_sweep(config, {"fake": FakeEngine()}, tmp_path / "s.sqlite")
    [cell] = cells(tmp_path / "s.sqlite", run.name)
    # Clean on q1, q3 (scored where transcribed): both right. Spoken: q1 right, q3 wrong. q2, q4 n/a.
    assert (cell.n, cell.n_not_applicable) == (2, 2)
    assert cell.clean_f1 == pytest.approx(100.0) and cell.f1 == pytest.approx(50.0)


def test_export_zip_and_delete(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    trial.add_recording("q1", wavs["q1"])
    with zipfile.ZipFile(io.BytesIO(trial.export_zip())) as zf:
        names = set(zf.namelist())
        assert {"t/trial.json", "t/trial.sqlite", "t/recordings/q1/001.wav", "t/recordings/q1/001.json"} <= names
        assert zf.read("t/recordings/q1/001.wav") == wavs["q1"]
    trial.delete()
    assert not (tmp_path / "t").exists() and trials.list_trials(tmp_path) == []
    with pytest.raises(trials.TrialError, match="no trial 't'"):
        trials.open_trial("t", tmp_path)


def test_delete_one_recording(tmp_path, wavs):
    trial = new_trial(tmp_path, trial_id="t")
    first = trial.add_recording("q1", wavs["q1"])
    trial.add_recording("q1", wavs["q2"])
    trial.delete_recording("q1", 1)
    assert [r.attempt for r in trial.recordings("q1")] == [2] and not first.path.exists()
    with pytest.raises(trials.TrialError, match="no recording 1 of question 'q1'"):
        trial.delete_recording("q1", 1)
