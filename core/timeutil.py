"""ISO-8601 times with offsets, as every format in docs/formats.md uses."""
from __future__ import annotations

from datetime import datetime, timezone


def parse_time(value: str) -> datetime:
    """Parse ISO-8601 with offset or Z; a naive time is an error (formats require an offset)."""
    if not isinstance(value, str):
        raise ValueError(f"time must be a string, got {type(value).__name__}")
    dt = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    if dt.tzinfo is None:
        raise ValueError(f"time {value!r} has no UTC offset")
    return dt


def format_time(dt: datetime) -> str:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.isoformat(timespec="seconds")
