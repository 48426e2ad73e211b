"""Container facts read with PyAV (FFmpeg): streams, duration, creation time; fails clearly on bad files."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from perception.clips import ClipError


@dataclass
class MediaInfo:
    duration_s: float
    has_video: bool
    has_audio: bool
    creation_time: Optional[str]
    width: int = 0
    height: int = 0


def probe(path: Path) -> MediaInfo:
    """Open the container and decode one video frame, so a truncated or corrupt clip fails here."""
    import av

    if path.stat().st_size == 0:
        raise ClipError("empty file (0 bytes)")
    try:
        with av.open(str(path)) as container:
            vstreams = container.streams.video
            astreams = container.streams.audio
            if not vstreams:
                raise ClipError("no video stream")
            vs = vstreams[0]
            duration = None
            if container.duration:
                duration = container.duration / 1_000_000
            elif vs.duration and vs.time_base:
                duration = float(vs.duration * vs.time_base)
            frame = None
            for frame in container.decode(video=0):
                break
            if frame is None:
                raise ClipError("no decodable video frame")
            created = container.metadata.get("creation_time") or vs.metadata.get("creation_time")
            return MediaInfo(duration_s=float(duration or 0.0), has_video=True, has_audio=bool(astreams),
                             creation_time=created, width=frame.width, height=frame.height)
    except ClipError:
        raise
    except av.error.FFmpegError as exc:
        raise ClipError(f"cannot decode ({type(exc).__name__}: {exc.strerror or exc})") from None
    except (OSError, ValueError) as exc:
        raise ClipError(f"cannot read: {exc}") from None
