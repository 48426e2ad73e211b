"""The gate's input features for one (recalled past event, current event) pair.

Both events are embedded with the bundled MiniLM; the features are their interaction
(u*v, |u-v|), the past event alone (u: does it read like a need or a promise?), their
cosine, the time gap, and whether the wearer spoke. Resolved intentions never reach the
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


def feature_dim(emb_dim: int) -> int:
    return 3 * emb_dim + N_SCALARS


def pair_features(u: np.ndarray, v: np.ndarray, past: Event, current: Event) -> np.ndarray:
    audio = past.audio or ""
    scalars = np.array([
        float(u @ v),
        math.log1p(gap_hours(current.dt - past.dt)) / 5.0,
        1.0 if audio.strip() else 0.0,
        1.0 if "[user]" in audio else 0.0,
    ], dtype=np.float32)
    return np.concatenate([u * v, np.abs(u - v), u, scalars]).astype(np.float32)


class Featurizer:
    """Embeds event texts and builds features. The embedder keeps vectors by text, so the many
    events that timelines share are embedded once."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray]):
        self.encode = encode

    def embed(self, events: Sequence[Event], progress: bool = False, batch: int = 64) -> list[np.ndarray]:
        texts = [event_line(e) for e in events]
        if not progress:
            return list(self.encode(texts))
        from tqdm import tqdm

        unique = list(dict.fromkeys(texts))
        vecs: dict[str, np.ndarray] = {}
        for i in tqdm(range(0, len(unique), batch), desc="embed events", unit="batch"):
            chunk = unique[i:i + batch]
            vecs.update(zip(chunk, self.encode(chunk)))
        return [vecs[t] for t in texts]

    def features(self, past: Sequence[Event], current: Event) -> np.ndarray:
        if not past:
            return np.zeros((0, 0), dtype=np.float32)
        vecs = self.embed([*past, current])
        v = vecs[-1]
        return np.stack([pair_features(u, v, p, current) for u, p in zip(vecs[:-1], past)])
