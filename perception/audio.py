"""Speech input for ASR: a same-stem audio file, else the video's own track, as 16 kHz mono float32."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from perception.clips import ClipError

SAMPLE_RATE = 16_000


def decode_audio(path: Path, what: str = "audio") -> Optional[np.ndarray]:
    """Decode the first audio stream of `path`; None when the file has no audio stream (normal for video)."""
    import av

    if path.stat().st_size == 0:
        raise ClipError(f"{what} {path.name}: empty file (0 bytes)")
    chunks = []
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                return None
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
            for out in resampler.resample(None):  # flush the resampler's tail
                chunks.append(out.to_ndarray().reshape(-1))
    except av.error.FFmpegError as exc:
        raise ClipError(f"{what} {path.name}: cannot decode ({type(exc).__name__}: {exc.strerror or exc})") from None
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32, copy=False)


def clip_audio(video: Path, audio_file: Optional[Path]) -> Optional[np.ndarray]:
    """A separate recording is preferred: wearables often store a better microphone track beside the video."""
    if audio_file is not None:
        return decode_audio(audio_file, "audio file")
    return decode_audio(video, "audio track of")
