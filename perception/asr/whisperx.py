"""GPU ASR: WhisperX (batched faster-whisper + VAD, wav2vec2 word alignment, pyannote diarization).

whisperx is imported lazily: it is a GPU-server extra (`pip install -e ".[gpu]"`). Alignment and
diarization weights come from the Hugging Face hub / torchaudio; on an offline server they must be
cached beforehand, and a missing one is reported as such instead of a stack trace.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Optional

import numpy as np

from core.providers.hub import hub_weights
from perception.asr import ASRError, Segment, Transcript


def _import_whisperx():
    try:
        import whisperx  # noqa: F401
    except ImportError as exc:
        raise ASRError(
            f"asr backend 'whisperx' is not installed here ({exc}); install the GPU extra "
            "(pip install -e '.[gpu]') or use asr.backend: faster-whisper"
        ) from None
    return whisperx


def _missing_weights(what: str, exc: BaseException) -> ASRError:
    """Alignment and diarization models are chosen inside whisperx (by language, by version): the
    message names the cache they were looked for in."""
    from core.providers.hub import hub_cache, offline

    hint = " (HF_HUB_OFFLINE is set: cache the weights first with network access)" if offline() else ""
    return ASRError(f"whisperx {what} weights are not available{hint}; looked in the Hugging Face cache at "
                    f"{hub_cache()}: {type(exc).__name__}: {exc}")


def segments_from_whisperx(result: dict[str, Any]) -> list[Segment]:
    """whisperx result (after alignment / speaker assignment) -> Segments; a speaker label comes from
    the segment, else from the majority of its words, as whisperx.assign_word_speakers leaves them."""
    out = []
    for seg in result.get("segments", []):
        speaker = seg.get("speaker")
        if speaker is None:
            votes: dict[str, int] = {}
            for w in seg.get("words", []) or []:
                if w.get("speaker"):
                    votes[w["speaker"]] = votes.get(w["speaker"], 0) + 1
            speaker = max(votes, key=votes.get) if votes else None
        out.append(Segment(float(seg.get("start", 0.0)), float(seg.get("end", 0.0)), str(seg.get("text", "")), speaker))
    return out


class WhisperXASR:
    def __init__(self, cfg):
        self.cfg = cfg
        self.wx = _import_whisperx()
        self.name = f"whisperx:{cfg.model or 'large-v3'}"
        from perception.asr.faster_whisper import hub_id

        # load_model wraps faster-whisper with batched inference and its bundled VAD.
        with hub_weights(hub_id(cfg.model or "large-v3"), "whisperx transcription model", "perception.asr.model",
                         ASRError):
            self.model = self.wx.load_model(cfg.model or "large-v3", cfg.device, compute_type=cfg.compute_type,
                                            language=cfg.language)
        self._align: dict[str, tuple[Any, Any]] = {}
        token = os.environ.get(cfg.hf_token_env) if cfg.hf_token_env else None
        self.diarizer = self._load_diarizer(token) if token else None
        self._lock = threading.Lock()

    def _load_diarizer(self, token: str):
        try:
            try:
                from whisperx.diarize import DiarizationPipeline
            except ImportError:
                DiarizationPipeline = self.wx.DiarizationPipeline
            try:
                return DiarizationPipeline(token=token, device=self.cfg.device)
            except TypeError:  # whisperx < 3.4 named the argument use_auth_token
                return DiarizationPipeline(use_auth_token=token, device=self.cfg.device)
        except Exception as exc:
            raise _missing_weights(
                f"diarization (pyannote; token from ${self.cfg.hf_token_env}, and the model's terms accepted on the hub)", exc
            ) from None

    def _aligner(self, language: str):
        if language not in self._align:
            try:
                self._align[language] = self.wx.load_align_model(language_code=language, device=self.cfg.device)
            except Exception as exc:
                raise _missing_weights(f"alignment (wav2vec2 for language {language!r})", exc) from None
        return self._align[language]

    def transcribe(self, audio: np.ndarray) -> Transcript:
        if audio.size == 0:
            return Transcript()
        with self._lock:
            t0 = time.perf_counter()
            result = self.model.transcribe(audio, batch_size=self.cfg.batch_size, language=self.cfg.language)
            language: Optional[str] = result.get("language") or self.cfg.language or "en"
            if result.get("segments"):
                model_a, meta = self._aligner(language)
                result = self.wx.align(result["segments"], model_a, meta, audio, self.cfg.device,
                                       return_char_alignments=False)
                if self.diarizer is not None:
                    diarized = self.diarizer(audio)
                    result = self.wx.assign_word_speakers(diarized, result)
            compute_s = time.perf_counter() - t0
        return Transcript(segments_from_whisperx(result), compute_s=compute_s)
