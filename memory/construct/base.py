"""What every constructor provides, and the shared pieces (embedders, time cues, candidates)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from core.formats import Event
from memory import timecues
from memory.store import Built, NewCue, NewLink


@dataclass
class Candidate:
    """An earlier event that a new event may develop, found by content similarity (top m)."""

    event: Event
    vec: np.ndarray
    fact: str  # its best-matching fact
    score: float
    cue_vec: np.ndarray | None = None  # the event in the cue space


class Constructor(Protocol):
    content: object  # embedder of the content space (facts, event vectors)
    cue: object  # embedder of the cue space (queries at a decision moment, event cues)

    def extract(self, events: list[Event]) -> list[Built]: ...

    def link(self, built: Built, candidates: list[Candidate]) -> list[NewLink]: ...


def time_cues(event: Event) -> list[NewCue]:
    """Time cues from what the event says ("the match is next Sunday"), resolved from its own time."""
    text = " ".join(t for t in (event.visual, event.audio) if t)
    return [NewCue("time", w.expression, None, w.start.timestamp(), w.end.timestamp())
            for w in timecues.resolve(text, event.dt)]
