"""Dialogue as real speech: espeak-ng, one voice per speaker, lines joined by short pauses."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

from bench.sample_clips.scenario import Line, Voice

LEAD_S = 0.8  # silence before the first line, as if the recording started mid-moment
PAUSE_S = 0.5  # between lines (turn taking)


class SpeechError(RuntimeError):
    pass


def _espeak(text: str, voice: Voice, out: Path) -> None:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise SpeechError("espeak-ng is not installed: run `bash tools/sysdeps.sh` (or apt-get install espeak-ng)")
    cmd = [exe, "-v", voice.voice, "-s", str(voice.speed), "-p", str(voice.pitch), "-g", str(voice.gap), "-w", str(out), text]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 or not out.exists():
        raise SpeechError(f"espeak-ng failed for {text!r} (voice {voice.voice}): {res.stderr.strip()[-300:]}")


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise SpeechError(f"{path}: expected 16-bit mono from espeak-ng")
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16), w.getframerate()


def synthesize(lines: list[Line], voices: dict[str, Voice]) -> tuple[np.ndarray, int]:
    """All lines of one clip as one int16 mono signal (espeak-ng's own rate, 22050 Hz)."""
    parts: list[np.ndarray] = []
    rate = None
    with tempfile.TemporaryDirectory(prefix="promem-speech-") as tmp:
        for n, line in enumerate(lines):
            path = Path(tmp) / f"{n}.wav"
            _espeak(line.say, voices[line.who], path)
            samples, sr = _read_wav(path)
            if rate is not None and sr != rate:
                raise SpeechError(f"espeak-ng changed sample rate between voices ({rate} vs {sr})")
            rate = sr
            parts.append(np.zeros(int((LEAD_S if n == 0 else PAUSE_S) * sr), np.int16))
            parts.append(samples)
    assert rate is not None, "synthesize() needs at least one line"
    return np.concatenate(parts), rate


def pad_to(samples: np.ndarray, rate: int, seconds: float) -> np.ndarray:
    n = int(round(seconds * rate))
    if len(samples) >= n:
        return samples[:n]
    return np.concatenate([samples, np.zeros(n - len(samples), np.int16)])


def write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype(np.int16).tobytes())
