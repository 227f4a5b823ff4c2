"""Speech: audio loading/validation, speech recognition (ASR) and text-to-speech (TTS) backends.

  audio.py     decode WAV/FLAC/OGG bytes or files to float32 mono, resample, reject bad audio
  asr.py       recognisers behind one interface: PocketSphinx (fixed vocabulary), faster-whisper
  tts.py       synthesisers behind one interface: espeak-ng, flite, festival, piper (neural)
  recorder.py  server-side microphone recording (sounddevice) and browser-recorder bytes
  noise.py     TTS -> ASR round trips with an on-disk transcript cache (NoiseQA synthetic ASR noise)

Nothing here imports streamlit. Heavy engines load lazily, once per process.
"""
