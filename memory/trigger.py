"""Context trigger: a cheap per-event check whether memory retrieval and the reasoner are needed at all.

An event is skipped (the decision is silence, nothing is recalled) when its caption and transcript hold
fewer than memory.trigger.min_content_words content words, when the user has no open or raised
intention formed before it, or when its cue vector (the one retrieval would query with, so nothing is
encoded twice) is less similar than memory.trigger.min_similarity to every such intention's event cue:
the situation resembles nothing pending. The event is still remembered.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
from pydantic import BaseModel

from core.formats import Event
from core.text import content_words


class TriggerVerdict(BaseModel):
    needed: bool
    words: int  # content words of caption and transcript
    similarity: Optional[float] = None  # best cue cosine to an open intention; None when not computed
    reason: str  # why it was skipped, or "" when needed


class TriggerCheck(NamedTuple):
    verdict: TriggerVerdict
    vectors: Optional[tuple]  # (content, cue) query vectors of the event, for retrieval; None when not encoded


def content_word_count(event: Event) -> int:
    return len(content_words(f"{event.visual or ''} {event.audio or ''}"))


def similarity(mem, event: Event, q_cue: np.ndarray) -> Optional[float]:
    """Best cue cosine of the event to an open or raised intention formed before it; None when there is none."""
    live = mem.store.live_intentions_before(mem.user, event.dt.timestamp())
    vecs = mem.store.event_cue_vecs(mem.user, [r.event_id for r in live], 0)
    return float(np.max(np.vstack(list(vecs.values())) @ q_cue)) if vecs else None


def check(mem, event: Event) -> TriggerCheck:
    """The verdict at `event` under mem's config (mem: the user's Memory, memory/api.py). The word count
    comes first, so a skipped small moment costs no encoding."""
    from memory.retrieve import query_vectors

    t = mem.cfg.memory.trigger
    words = content_word_count(event)
    if words < t.min_content_words:
        return TriggerCheck(TriggerVerdict(needed=False, words=words,
                                           reason=f"trigger: {words} content word(s) (< {t.min_content_words})"), None)
    vectors = query_vectors(mem, event)
    sim = similarity(mem, event, vectors[1])
    if sim is None:
        return TriggerCheck(TriggerVerdict(needed=False, words=words, reason="trigger: no open intention"), vectors)
    if sim < t.min_similarity:
        why = f"trigger: nearest open intention at cue cosine {sim:.2f} (< {t.min_similarity:g})"
        return TriggerCheck(TriggerVerdict(needed=False, words=words, similarity=round(sim, 4), reason=why), vectors)
    return TriggerCheck(TriggerVerdict(needed=True, words=words, similarity=round(sim, 4), reason=""), vectors)
