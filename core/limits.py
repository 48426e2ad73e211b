"""Size caps on the text fields of an event (cfg.limits): an oversized event is refused whole, with
the field named, instead of being embedded and stored."""
from __future__ import annotations

from typing import Optional

from core.formats import Event
from core.jsonio import LineError

SHORT_FIELDS = ("id", "user_id", "location", "time", "end")


def oversized(event: Event, limits) -> Optional[str]:
    """Why `event` is too large ("key 'visual' has 50000 characters; at most 8000 (limits.max_text_chars)"), or None."""
    problems = []
    for key in SHORT_FIELDS:
        v = getattr(event, key)
        if isinstance(v, str) and len(v) > limits.max_field_chars:
            problems.append(f"key '{key}' has {len(v)} characters; at most {limits.max_field_chars} "
                            "(limits.max_field_chars)")
    long = [("visual", event.visual), ("audio", event.audio), *(event.model_extra or {}).items()]
    for key, v in long:
        if isinstance(v, str) and len(v) > limits.max_text_chars:
            problems.append(f"key '{key}' has {len(v)} characters; at most {limits.max_text_chars} "
                            "(limits.max_text_chars)")
    return "; ".join(problems) or None


def drop_oversized(good: list[tuple[int, Event]], limits, path) -> tuple[list[tuple[int, Event]], list[LineError]]:
    """Split read_records' (line, event) pairs into those within the caps and a LineError per other line."""
    kept, bad = [], []
    for no, event in good:
        if why := oversized(event, limits):
            bad.append(LineError(str(path), no, f"event {event.id[:80]!r}: {why}"))
        else:
            kept.append((no, event))
    return kept, bad
