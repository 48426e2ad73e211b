"""Real test media made on the spot: OpenCV frames, espeak-ng speech, muxed by ffmpeg."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

HAVE_TOOLS = bool(shutil.which("ffmpeg") and shutil.which("espeak-ng"))

RED, GREEN, BLUE = (0, 0, 255), (0, 255, 0), (255, 0, 0)  # BGR


def speech_wav(text: str, path: Path) -> Path:
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(path), text], check=True, capture_output=True)
    return path


def make_clip(path: Path, seconds: float = 2.0, fps: int = 10, size=(160, 120),
              colors: Sequence[tuple[int, int, int]] = (RED,), speech: Optional[str] = None,
              rotate: Optional[int] = None, creation_time: Optional[str] = None) -> Path:
    """A clip whose colour changes `len(colors)` times (scene changes) with a white top-left marker
    (to see rotation), optionally with espeak-ng speech as its audio track."""
    import cv2

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.avi"
        w = cv2.VideoWriter(str(raw), cv2.VideoWriter_fourcc(*"MJPG"), fps, size)
        n = max(1, int(seconds * fps))
        for i in range(n):
            frame = np.zeros((size[1], size[0], 3), np.uint8)
            frame[:] = colors[min(len(colors) - 1, i * len(colors) // n)]
            frame[: size[1] // 4, : size[0] // 4] = 255
            w.write(frame)
        w.release()
        cmd = ["ffmpeg", "-y", "-loglevel", "error", "-i", str(raw)]
        if speech:
            cmd += ["-i", str(speech_wav(speech, Path(tmp) / "speech.wav"))]
        ext = path.suffix.lower()
        vcodec = ["-c:v", "libvpx", "-b:v", "200k"] if ext == ".webm" else ["-c:v", "libx264", "-pix_fmt", "yuv420p"]
        acodec = (["-c:a", "libopus"] if ext == ".webm" else ["-c:a", "aac"]) if speech else []
        meta = ["-metadata", f"creation_time={creation_time}"] if creation_time else []
        if rotate is None:
            subprocess.run(cmd + vcodec + acodec + meta + [str(path)], check=True)
        else:
            # ffmpeg 5 writes the rotate tag as a display matrix only on stream copy.
            mid = Path(tmp) / f"mid{path.suffix}"
            subprocess.run(cmd + vcodec + acodec + [str(mid)], check=True)
            subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(mid), "-c", "copy",
                            "-metadata:s:v:0", f"rotate={rotate}"] + meta + [str(path)], check=True)
    return path


def truncate(src: Path, dst: Path, keep: float = 0.5) -> Path:
    data = Path(src).read_bytes()
    Path(dst).write_bytes(data[: int(len(data) * keep)])
    return Path(dst)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Levenshtein distance over words / reference length, after lower-casing and dropping punctuation."""
    import re

    norm = lambda s: re.sub(r"[^a-z0-9' ]+", " ", s.lower()).split()  # noqa: E731
    ref, hyp = norm(reference), norm(hypothesis)
    if not ref:
        return float(bool(hyp))
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)
