"""Speech recognition backends behind one interface (registry kind "asr").

A backend is a class registered here and built from core.config.perception.ASRConfig; the
`ASR` protocol below is its contract. Its cache fingerprint is the config section's backend,
model, language and compute_type.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol

import numpy as np

from core import registry

registry.register("asr", "faster-whisper", "perception.asr.faster_whisper:FasterWhisperASR")
registry.register("asr", "whisperx", "perception.asr.whisperx:WhisperXASR")


@dataclass
class Segment:
    start: float
    end: float
    text: str
    speaker: Optional[str] = None


@dataclass
class Transcript:
    segments: list[Segment] = field(default_factory=list)
    compute_s: float = 0.0  # time the model worked, without waiting for other workers (for the RTF)

    @property
    def text(self) -> str:
        return segments_to_text(self.segments)


class ASR(Protocol):
    """A speech recognition backend; building it loads the model, or raises ASRError saying what
    to install or cache."""

    name: str  # lands in each event's perception.asr, e.g. "faster-whisper:tiny.en"

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """Audio as float32 16 kHz mono (empty: an empty Transcript); safe to call from worker threads."""
        ...


class ASRError(RuntimeError):
    """The backend cannot run (missing package or weights); says what to install or cache."""


def segments_to_text(segments: list[Segment]) -> str:
    """Join segments; with diarization, a "[speaker]" prefix starts each change of speaker
    (docs/formats.md section 2)."""
    parts: list[str] = []
    current: Optional[str] = None
    for seg in segments:
        text = " ".join(seg.text.split())
        if not text:
            continue
        if seg.speaker and seg.speaker != current:
            parts.append(f"[{seg.speaker}] {text}")
            current = seg.speaker
        else:
            parts.append(text)
    return " ".join(parts)


def build_asr(cfg) -> ASR:
    """cfg: core.config.perception.ASRConfig."""
    return registry.create("asr", cfg.backend, cfg)
