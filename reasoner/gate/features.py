"""The gate's input features for one (recalled past event, current event) pair.

Both events are embedded with the bundled MiniLM; the features are their interaction
(u*v, |u-v|), the past event alone (u: does it read like a need or a promise?), their
cosine, the time gap, and whether the wearer spoke. With the trained cue encoder at hand, its
cosine and interaction join them: it was tuned to place an opportunity near the earlier event
it makes actionable, which is the gate's question. Resolved intentions never reach the
features: the linker's state-change links remove them before scoring (reasoner.gate.reasoner).
"""
from __future__ import annotations

import math
from datetime import timedelta
from typing import Callable, Sequence

import numpy as np

from core.formats import Event

N_SCALARS = 4


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


def feature_dim(emb_dim: int, cue_dim: int = 0) -> int:
    return 3 * emb_dim + N_SCALARS + (cue_dim + 1 if cue_dim else 0)


def pair_features(u: np.ndarray, v: np.ndarray, past: Event, current: Event,
                  cue: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    audio = past.audio or ""
    scalars = np.array([
        float(u @ v),
        math.log1p(gap_hours(current.dt - past.dt)) / 5.0,
        1.0 if audio.strip() else 0.0,
        1.0 if "[user]" in audio else 0.0,
    ], dtype=np.float32)
    parts = [u * v, np.abs(u - v), u, scalars]
    if cue is not None:
        cu, cv = cue
        parts += [np.array([cu @ cv], dtype=np.float32), cu * cv]
    return np.concatenate(parts).astype(np.float32)


Encode = Callable[[list[str]], np.ndarray]


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
    events that timelines share are embedded once."""

    def __init__(self, encode: Encode, cue_encode: Encode | None = None):
        self.encode = encode
        self.cue_encode = cue_encode

    def embed(self, events: Sequence[Event], progress: bool = False) -> list[np.ndarray]:
        return _embed(self.encode, [event_line(e) for e in events], progress, "embed events")

    def embed_cue(self, events: Sequence[Event], progress: bool = False) -> list[np.ndarray] | None:
        # the cue encoder was trained on Event.text(), as memory indexes it
        if self.cue_encode is None:
            return None
        return _embed(self.cue_encode, [e.text() for e in events], progress, "embed events (cue encoder)")

    def features(self, past: Sequence[Event], current: Event) -> np.ndarray:
        if not past:
            return np.zeros((0, 0), dtype=np.float32)
        vecs = self.embed([*past, current])
        cue = self.embed_cue([*past, current])
        v = vecs[-1]
        return np.stack([pair_features(u, v, p, current, (cue[i], cue[-1]) if cue is not None else None)
                         for i, (u, p) in enumerate(zip(vecs[:-1], past))])
