"""What a retrieval hands the reasoner: past events with how and why they were recalled."""
from __future__ import annotations

from dataclasses import dataclass, field

from core.formats import Event


@dataclass
class Link:
    """A later event that develops an earlier one; kind "state_change" resolves or changes an intention."""

    event_id: str
    kind: str  # "state_change" | "development"
    score: float = 0.0


@dataclass
class Recalled:
    event: Event
    score: float
    path: str  # "content" | "cue" | "time" | "link" (memory); "bm25" | "embed" | "all" (baselines)
    fact: str = ""  # the fact or cue text that matched
    links: list[Link] = field(default_factory=list)  # later developments of this event, if known
