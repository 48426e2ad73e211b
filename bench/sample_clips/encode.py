"""FFmpeg steps: frames (+ speech) -> H.264/AAC MP4, speech -> 16 kHz mono WAV.

OpenCV's pip wheel carries no H.264 encoder, so frames go to ffmpeg (libx264) as raw video.
Single-threaded, bit-exact settings keep the output identical for the same seed.
"""
from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import numpy as np

from bench.sample_clips.plan import FPS, SIZE

EXACT = ["-fflags", "+bitexact", "-flags", "+bitexact", "-map_metadata", "-1", "-threads", "1"]


class EncodeError(RuntimeError):
    pass


def ffmpeg_exe() -> str:
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise EncodeError("ffmpeg is not installed: run `bash tools/sysdeps.sh` (or apt-get install ffmpeg)")
    return exe


def _run(cmd: list[str], what: str, stdin_frames: Iterable[np.ndarray] | None = None) -> None:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin_frames is not None else None,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if stdin_frames is not None:
            for frame in stdin_frames:
                proc.stdin.write(frame.tobytes())
            proc.stdin.close()
        err = proc.stderr.read().decode("utf-8", "replace")
        rc = proc.wait()
    except BrokenPipeError:
        err = proc.stderr.read().decode("utf-8", "replace")
        rc = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if rc != 0:
        raise EncodeError(f"ffmpeg failed writing {what} (exit {rc}): {err.strip()[-400:]}")


def encode_mp4(frames: Iterable[np.ndarray], out: Path, created: datetime, audio_wav: Path | None = None) -> None:
    """Write `out` (MP4 container chosen explicitly, so `out` may be a temp name)."""
    w, h = SIZE
    cmd = [ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error",
           "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{w}x{h}", "-r", str(FPS), "-i", "pipe:0"]
    if audio_wav is not None:
        cmd += ["-i", str(audio_wav)]
    cmd += ["-map", "0:v", "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-pix_fmt", "yuv420p", "-g", str(FPS * 2)]
    if audio_wav is not None:
        cmd += ["-map", "1:a", "-c:a", "aac", "-b:a", "48k", "-ar", "16000", "-ac", "1"]
    cmd += EXACT
    # a camera stamps its recordings; docs/formats.md uses it as the third source of a clip's start
    stamp = created.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    cmd += ["-metadata", f"creation_time={stamp}", "-movflags", "+faststart", "-f", "mp4", str(out)]
    _run(cmd, str(out), stdin_frames=frames)


def to_wav16k(src: Path, out: Path) -> None:
    cmd = [ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error", "-i", str(src),
           "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", *EXACT, "-f", "wav", str(out)]
    _run(cmd, str(out))
