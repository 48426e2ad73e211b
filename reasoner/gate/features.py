"""The gate's input features for one (recalled past event, current event) pair.

A few numbers rather than the embeddings themselves: how alike the two events are (MiniLM and
the trained cue encoder, which was tuned to place an opportunity near the earlier event it makes
actionable), what role each plays (forms an intention? reports a state change? is a chance to
act?, from the event role classifiers), products of those, the time gap, whether anyone spoke,
and how far the candidate's similarities and intent score stand above the median of the other
candidates. Similarities and roles, unlike raw embeddings, mean the same on scenarios the gate never
saw; the relative ones also on another voice: long, cluttered captions raise every cosine and role
score of a timeline alike. Resolved intentions never reach the features:
the linker's state-change links remove them before scoring (reasoner.gate.reasoner).
"""
from __future__ import annotations

import math
from datetime import timedelta
from typing import Callable, Sequence

import numpy as np

from core.formats import Event

ROLES = ("formation", "state_change", "opportunity")  # columns of the role scores
FEATURES = ("content_cos", "cue_cos", "content_cos*cue_cos",
            "past_intent", "past_change", "past_opportunity", "now_intent", "now_change", "now_opportunity",
            "past_intent*now_opportunity", "past_intent*cue_cos", "now_opportunity*cue_cos",
            "log_gap", "past_speech", "past_user_spoke",
            "content_cos_rel", "cue_cos_rel", "past_intent_rel")


def gap_hours(delta: timedelta) -> float:
    return max(0.0, delta.total_seconds() / 3600)


def event_line(e: Event) -> str:
    parts = []
    if e.location:
        parts.append(f"At {e.location}.")
    if e.visual:
        parts.append(e.visual.strip())
    if e.audio:
        parts.append(f'Heard: "{e.audio.strip()}"')
    return " ".join(parts)


def pair_features(content_cos: float, cue_cos: float, past_roles: np.ndarray, now_roles: np.ndarray,
                  past: Event, current: Event) -> np.ndarray:
    ip, cp, op = past_roles
    i_n, c_n, o_n = now_roles
    audio = past.audio or ""
    return np.array([
        content_cos, cue_cos, content_cos * cue_cos, ip, cp, op, i_n, c_n, o_n,
        ip * o_n, ip * cue_cos, o_n * cue_cos,
        math.log1p(gap_hours(current.dt - past.dt)) / 5.0,
        1.0 if audio.strip() else 0.0, 1.0 if "[user]" in audio else 0.0,
    ], dtype=np.float32)


Encode = Callable[[list[str]], np.ndarray]
Roles = Callable[[Sequence[Event], np.ndarray], np.ndarray]  # (events, their MiniLM vectors) -> (n, ROLES)


def _embed(encode: Encode, texts: list[str], progress: bool, desc: str, batch: int = 64) -> list[np.ndarray]:
    if not progress:
        return list(encode(texts))
    from tqdm import tqdm

    unique = list(dict.fromkeys(texts))
    vecs: dict[str, np.ndarray] = {}
    for i in tqdm(range(0, len(unique), batch), desc=desc, unit="batch"):
        chunk = unique[i:i + batch]
        vecs.update(zip(chunk, encode(chunk)))
    return [vecs[t] for t in texts]


class Featurizer:
    """Embeds event texts and builds features. The embedders keep vectors by text, so the many
    events that timelines share are embedded once. Without a cue encoder, MiniLM stands in."""

    def __init__(self, encode: Encode, cue_encode: Encode | None = None, roles: Roles | None = None):
        self.encode = encode
        self.cue_encode = cue_encode
        self.roles = roles

    # Event.text(), as memory embeds every event when it comes in: deciding, the vectors are found
    # in the embedders' caches instead of computed again (the cue encoder was trained on it too).
    def embed(self, events: Sequence[Event], progress: bool = False) -> list[np.ndarray]:
        return _embed(self.encode, [e.text() for e in events], progress, "embed events")

    def embed_cue(self, events: Sequence[Event], progress: bool = False) -> list[np.ndarray]:
        if self.cue_encode is None:
            return self.embed(events, progress)
        return _embed(self.cue_encode, [e.text() for e in events], progress, "embed events (cue encoder)")

    def features(self, past: Sequence[Event], current: Event, reference: Sequence[Event] = ()) -> np.ndarray:
        """reference: the earlier events the past ones are weighed against (default: `past` itself,
        the candidates memory handed over). A longer, wordier voice raises every cosine and role
        score alike; how far a candidate stands above the others of its own timeline does not move."""
        if not past:
            return np.zeros((0, len(FEATURES)), dtype=np.float32)
        if self.roles is None:
            raise RuntimeError("the featurizer needs the event role classifiers (a trained gate)")
        events = [*past, *reference, current]
        vecs = np.stack(self.embed(events))
        cue = np.stack(self.embed_cue(events))
        roles = self.roles(events, vecs)
        cos, cue_cos = vecs[:-1] @ vecs[-1], cue[:-1] @ cue[-1]
        n = len(past)
        ref = slice(n, len(events) - 1) if reference else slice(0, n)  # rows of the reference events
        mid = (float(np.median(cos[ref])), float(np.median(cue_cos[ref])), float(np.median(roles[ref, 0])))
        return np.stack([np.concatenate([
            pair_features(float(cos[i]), float(cue_cos[i]), roles[i], roles[-1], p, current),
            np.array([cos[i] - mid[0], cue_cos[i] - mid[1], roles[i, 0] - mid[2]], dtype=np.float32)])
            for i, p in enumerate(past)])
