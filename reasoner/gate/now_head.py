"""The "now" head: scores the current event by itself (does this moment alone call for help, as
CAB labels it). Used only when memory hands the gate nothing to weigh, so it never competes with
(or adds false detections to) the pair gate on moments that have a past.

Two kinds, chosen by the recipe's now_model, both saved inside the gate's artifact folder with
their record under "now" in its meta.json (core.artifacts.ArtifactMeta, version NOW_VERSION):
- finetune: MiniLM fine-tuned end to end on the moment's text (core/text_classifier.py), its tuned
  weights in now/classifier.safetensors (fp16);
- logistic: a logistic layer over the frozen MiniLM embedding of the moment plus two speech flags,
  in now.pt.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from core.artifacts import ArtifactError, ArtifactMeta, cached_model
from core.formats import Event

NOW_VERSION = 3  # 2: the logistic layer only, versioned with the gate
WEIGHTS = "now.pt"  # logistic
FOLDER = "now"  # finetune: core.text_classifier.WEIGHTS inside it
N_SCALARS = 2
WAY_OUT = "run `promem train gate --now-only` (or `promem train gate`)"


class NowHeadUnusable(ArtifactError):
    """A gate artifact whose now head is missing files or of another version."""


def now_text(e: Event) -> str:
    """What the fine-tuned head reads: the moment as the gate writes an event."""
    from reasoner.gate.features import event_line

    return event_line(e)


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
    """What the gate asks of a now head: score(event) in [0, 1] against threshold."""

    def __init__(self, meta: ArtifactMeta):
        self.meta = meta

    @property
    def threshold(self) -> float:
        return float(self.meta.threshold)

    def score_many(self, events: Sequence[Event]) -> np.ndarray:
        raise NotImplementedError

    def score(self, event: Event) -> float:
        return float(self.score_many([event])[0])

    @classmethod
    def load(cls, path: Path, meta: ArtifactMeta | None, featurizer) -> "NowHead | None":
        """The now head of the gate at `path`; None when it holds none (trained without CAB data).
        NowHeadUnusable, naming the path and the command, when its record is of another version
        or its weights are missing."""
        if meta is None:
            return None
        path = Path(path)
        if meta.version != NOW_VERSION:
            raise NowHeadUnusable(f"the now head of the gate at {path}: it is version {meta.version}, "
                                  f"this code reads version {NOW_VERSION}: {WAY_OUT}")
        kind = meta.metrics.get("model", "logistic")
        if kind == "finetune":
            from core.text_classifier import WEIGHTS as CLASSIFIER

            weights = path / FOLDER / CLASSIFIER
        else:
            weights = path / WEIGHTS
        if not weights.is_file():
            raise NowHeadUnusable(f"the now head of the gate at {path}: {weights} is missing: {WAY_OUT}")
        if kind == "finetune":
            return FinetunedNowHead.load_from(path, meta)
        return LogisticNowHead.load_from(path, meta, featurizer)


class FinetunedNowHead(NowHead):
    def __init__(self, model, meta: ArtifactMeta):
        super().__init__(meta)
        self.model = model  # core.text_classifier.TextClassifier

    @classmethod
    def load_from(cls, path: Path, meta: ArtifactMeta) -> "FinetunedNowHead":
        from core.text_classifier import TextClassifier

        def build():
            try:
                return TextClassifier.load(path / FOLDER)
            except (OSError, ValueError) as exc:
                raise NowHeadUnusable(f"the now head of the gate at {path}: {exc}: {WAY_OUT}") from None

        # keyed on the gate's meta.json, written last by `promem train gate [--now-only]`
        return cls(cached_model("now-head", path, "finetune", build), meta)

    def score_many(self, events: Sequence[Event]) -> np.ndarray:
        return self.model.score([now_text(e) for e in events])

    def save(self, path: Path) -> None:
        self.model.save(Path(path) / FOLDER)


class LogisticNowHead(NowHead):
    def __init__(self, net, featurizer, meta: ArtifactMeta):
        super().__init__(meta)
        self.net = net.eval()
        self.featurizer = featurizer

    @classmethod
    def load_from(cls, path: Path, meta: ArtifactMeta, featurizer) -> "LogisticNowHead":
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

    def save(self, path: Path) -> None:
        import torch

        Path(path).mkdir(parents=True, exist_ok=True)
        torch.save(self.net.state_dict(), Path(path) / WEIGHTS)
