"""Facts from an event's own text: the sentences of what was seen and what was heard.

Used by the encoder constructor (CPU) and as the fallback of the LLM constructor, so that an
event always enters memory with something searchable even when the model fails.
"""
from __future__ import annotations

import re

from core.formats import Event

_SENT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_SPEAKER = re.compile(r"(\[[^\]]{1,40}\])")
MIN_CHARS = 12  # shorter fragments ("Great.", "Yes, ma'am.") match everything and mean nothing alone


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def utterances(audio: str) -> list[str]:
    """Split "[A] hi. [B] bye." into "[A] hi." and "[B] bye.", keeping who said it."""
    parts = _SPEAKER.split(audio)
    out, speaker = [], ""
    for p in parts:
        if _SPEAKER.fullmatch(p):
            speaker = p
        elif p.strip():
            out.extend(f"{speaker} {s}".strip() for s in sentences(p))
    return out


def event_facts(event: Event) -> list[str]:
    """Sentence-level facts; a location prefix keeps "[kitchen] the box is empty" situated."""
    where = f"[{event.location}] " if event.location else ""
    facts = [where + s for s in sentences(event.visual or "")]
    facts += [where + u for u in utterances(event.audio or "")]
    facts = [f for f in facts if len(f) - len(where) >= MIN_CHARS]
    # the whole event too: a later moment often echoes the gist of a scene, not any one sentence
    return facts + [event.text()] if len(facts) > 1 else facts or [event.text()]
