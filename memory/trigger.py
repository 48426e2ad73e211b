"""Context trigger: a cheap per-event check whether memory retrieval and the reasoner are needed at all.

An event is needed when its caption and transcript hold at least memory.trigger.min_content_words
content words and its cue vector (the one retrieval queries with, so nothing is encoded twice) is
either at least memory.trigger.min_similarity similar to the event cue of an open or raised intention
formed before it, or at least memory.trigger.min_cue_score similar to the event cue of ANY earlier
stored event (the top cue-retrieval score). The second test keeps the moments whose formation
construction did not flag as an intention. Otherwise the event is skipped: the decision is silence,
nothing is recalled, and the event is still remembered. No model is asked beyond the encoders
retrieval runs anyway.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import numpy as np
from pydantic import BaseModel

from core.formats import Event
from core.text import content_words


class TriggerVerdict(BaseModel):
    needed: bool
    words: int  # content words of caption and transcript
    similarity: Optional[float] = None  # best cue cosine to an open intention; None when not computed or none
    cue_score: Optional[float] = None  # best cue cosine to any earlier stored event; None when not computed or none
    reason: str  # why it was skipped, or "" when needed


class TriggerCheck(NamedTuple):
    verdict: TriggerVerdict
    vectors: Optional[tuple]  # (content, cue) query vectors of the event, for retrieval; None when not encoded


def content_word_count(event: Event) -> int:
    return len(content_words(f"{event.visual or ''} {event.audio or ''}"))


def _r(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x, 4)


def rule(t, words: int, sim: Optional[float], top: Optional[float]) -> TriggerVerdict:
    """The verdict from the three measurements under t (memory.trigger); sim/top are None when unknown."""
    if words < t.min_content_words:
        return TriggerVerdict(needed=False, words=words,
                              reason=f"trigger: {words} content word(s) (< {t.min_content_words})")
    if (sim is not None and sim >= t.min_similarity) or (top is not None and top >= t.min_cue_score):
        return TriggerVerdict(needed=True, words=words, similarity=_r(sim), cue_score=_r(top), reason="")
    parts = ["no open intention" if sim is None
             else f"nearest open intention at cue cosine {sim:.2f} (< {t.min_similarity:g})",
             "no earlier event" if top is None else f"nearest earlier event at {top:.2f} (< {t.min_cue_score:g})"]
    return TriggerVerdict(needed=False, words=words, similarity=_r(sim), cue_score=_r(top),
                          reason="trigger: " + "; ".join(parts))


def similarity(mem, event: Event, q_cue: np.ndarray) -> Optional[float]:
    """Best cue cosine of the event to an open or raised intention formed before it; None when there is none."""
    live = mem.store.live_intentions_before(mem.user, event.dt.timestamp())
    vecs = mem.store.event_cue_vecs(mem.user, [r.event_id for r in live], 0)
    return float(np.max(np.vstack(list(vecs.values())) @ q_cue)) if vecs else None


def top_cue_score(mem, event: Event, q_cue: np.ndarray) -> Optional[float]:
    """Best cue cosine of the event to any stored event before it (the cue index's top hit, as retrieval
    searches it); None when memory holds no earlier event."""
    from memory.retrieve import _best_events

    n = max(mem.cfg.memory.retrieval.cue_candidates, 1)
    hits = _best_events(mem, mem.cues, "cues", q_cue, n, event.dt.timestamp(), event.id, set(), 1)
    return float(hits[0][1]) if hits else None


def check(mem, event: Event) -> TriggerCheck:
    """The verdict at `event` under mem's config (mem: the user's Memory, memory/api.py). The word count
    comes first, so a skipped small moment costs no encoding."""
    from memory.retrieve import query_vectors

    t = mem.cfg.memory.trigger
    words = content_word_count(event)
    if words < t.min_content_words:
        return TriggerCheck(rule(t, words, None, None), None)
    vectors = query_vectors(mem, event)
    sim = similarity(mem, event, vectors[1])
    top = None if (sim is not None and sim >= t.min_similarity) else top_cue_score(mem, event, vectors[1])
    return TriggerCheck(rule(t, words, sim, top), vectors)


def verdicts_as_of(mem, events: Sequence[Event]) -> list[TriggerVerdict]:
    """The verdict at each of these STORED events with the memory as it stood just before it: the
    earlier events' cues, the intentions formed before it and not yet resolved, expired or dismissed
    then. What walking the timeline online gives, from the stored cue vectors (nothing is encoded);
    the benchmark measures the trigger on a timeline's ordinary moments with it."""
    t = mem.cfg.memory.trigger
    stored = mem.store.events(mem.user, mem.store.all_event_ids(mem.user))
    ids = list(stored)
    cues = mem.store.event_cue_vecs(mem.user, ids, 0)
    with_cue = [i for i in ids if i in cues]
    mat = np.vstack([cues[i] for i in with_cue]) if with_cue else np.zeros((0, 1), np.float32)
    ts = np.array([stored[i].ts for i in with_cue])
    spans = mem.store.intention_spans(mem.user)
    out = []
    for e in events:
        words = content_word_count(e)
        q = cues.get(e.id)
        if words < t.min_content_words or q is None or e.id not in stored:
            out.append(rule(t, words, None, None) if words < t.min_content_words
                       else check(mem, e).verdict)  # not stored with a cue: encode it as online
            continue
        at = stored[e.id].ts
        scores = mat @ q
        before = (ts < at) & np.array([i != e.id for i in with_cue], dtype=bool)
        top = float(scores[before].max()) if before.any() else None
        live = {s.event_id for s in spans if s.formed_ts < at and (s.ended_ts is None or s.ended_ts >= at)}
        pos = [n for n, i in enumerate(with_cue) if i in live]
        sim = float(scores[pos].max()) if pos else None
        out.append(rule(t, words, sim, top))
    return out
