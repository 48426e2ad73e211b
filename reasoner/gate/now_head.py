"""The "now" head: scores the current event by itself (does this moment alone call for help, as
CAB labels it). Used only when memory hands the gate nothing to weigh, so it never competes with
(or adds false detections to) the pair gate on moments that have a past.

A logistic layer over the frozen MiniLM embedding of the moment plus two speech flags; saved
beside the pair gate as now.pt, with its record under "now" in meta.json (core.artifacts.ArtifactMeta).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from core.artifacts import ArtifactMeta
from core.formats import Event

WEIGHTS = "now.pt"
N_SCALARS = 2


def now_features(vecs: np.ndarray, events: Sequence[Event]) -> np.ndarray:
    flags = np.array([[1.0 if (e.audio or "").strip() else 0.0, 1.0 if "?" in (e.audio or "") else 0.0]
                      for e in events], dtype=np.float32).reshape(len(events), N_SCALARS)
    return np.concatenate([vecs.astype(np.float32), flags], axis=1)


def build_head(in_dim: int, hidden: int):
    import torch

    if hidden <= 0:
        return torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(in_dim, 1))
    return torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(in_dim, hidden), torch.nn.ReLU(),
                               torch.nn.Dropout(0.3), torch.nn.Linear(hidden, 1))


class NowHead:
    def __init__(self, net, featurizer, meta: ArtifactMeta):
        self.net = net.eval()
        self.featurizer = featurizer
        self.meta = meta

    @property
    def threshold(self) -> float:
        return float(self.meta.threshold)

    @classmethod
    def load(cls, path: Path, meta: ArtifactMeta | None, featurizer) -> "NowHead | None":
        """None when the artifact holds no now head (trained without CAB data)."""
        if not meta or not (Path(path) / WEIGHTS).is_file():
            return None
        import torch

        net = build_head(meta.metrics["in_dim"], meta.metrics["hidden"])
        net.load_state_dict(torch.load(Path(path) / WEIGHTS, map_location="cpu", weights_only=True))
        return cls(net, featurizer, meta)

    def score_many(self, events: Sequence[Event]) -> np.ndarray:
        import torch

        if not events:
            return np.zeros(0, dtype=np.float32)
        feats = now_features(np.stack(self.featurizer.embed(list(events))), events)
        with torch.inference_mode():
            return torch.sigmoid(self.net(torch.from_numpy(feats)).squeeze(-1)).numpy().reshape(-1)

    def score(self, event: Event) -> float:
        return float(self.score_many([event])[0])

    def save(self, path: Path) -> None:
        import torch

        Path(path).mkdir(parents=True, exist_ok=True)
        torch.save(self.net.state_dict(), Path(path) / WEIGHTS)
