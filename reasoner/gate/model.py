"""The gate model: a small MLP over MiniLM (and cue-encoder) pair features, saved as model.pt +
meta.json. meta.json names the cue encoder the gate was trained with, which it loads again."""
from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from core.formats import Event
from reasoner.gate.features import Featurizer, feature_dim

META = "meta.json"
WEIGHTS = "model.pt"
_CACHE: dict[str, "GateModel"] = {}
_LOCK = threading.Lock()
log = logging.getLogger(__name__)


class GateNotTrained(FileNotFoundError):
    pass


def build_mlp(in_dim: int, hidden: int, dropout: float = 0.3):
    import torch

    return torch.nn.Sequential(
        torch.nn.Dropout(0.1), torch.nn.Linear(in_dim, hidden), torch.nn.ReLU(),
        torch.nn.Dropout(dropout), torch.nn.Linear(hidden, 1),
    )


def default_embedder():
    from core.config import EmbedderConfig
    from core.providers import build_embedder

    # training embeds every pair's events once, then looks each up again: keep them all
    return build_embedder(EmbedderConfig(cache_size=50000))


def cue_fingerprint(spec: str) -> str | None:
    """Identifies one training run of the cue encoder (its meta.json holds losses and timings)."""
    if spec == "base":
        return None
    from core.config import resolve_path

    meta = resolve_path(spec) / "meta.json"
    return hashlib.sha1(meta.read_bytes()).hexdigest()[:16] if meta.is_file() else None


def load_cue_encoder(spec: str):
    from core.config import EmbedderConfig
    from memory.construct.artifacts import cue_encoder

    return cue_encoder(spec, EmbedderConfig(cache_size=50000))


class GateModel:
    def __init__(self, mlp, embedder, meta: dict, cue=None):
        self.mlp = mlp.eval()
        self.embedder = embedder
        self.cue = cue
        self.meta = meta
        self.featurizer = Featurizer(embedder.encode, cue.encode if cue is not None else None)
        self.now = None  # NowHead when the artifact holds one (reasoner/gate/now_head.py)

    @classmethod
    def fresh(cls, hidden: int, embedder=None, cue_spec: str | None = None) -> "GateModel":
        """cue_spec: the cue encoder whose features join MiniLM's (an artifact folder or "base")."""
        embedder = embedder or default_embedder()
        cue = load_cue_encoder(cue_spec) if cue_spec else None
        dim = feature_dim(embedder.dim, cue.dim if cue is not None else 0)
        meta = {"in_dim": dim, "hidden": hidden}
        if cue_spec:
            meta |= {"cue_encoder": cue_spec, "cue_encoder_fingerprint": cue_fingerprint(cue_spec)}
        return cls(build_mlp(dim, hidden), embedder, meta, cue)

    @classmethod
    def load(cls, path: str | Path) -> "GateModel":
        path = Path(path)
        key = str(path.resolve())
        with _LOCK:
            if key in _CACHE:
                return _CACHE[key]
            if not (path / META).is_file() or not (path / WEIGHTS).is_file():
                raise GateNotTrained(f"no trained gate at {path} (needs {META} and {WEIGHTS}); "
                                     f"run `promem train gate` first")
            import torch

            meta = json.loads((path / META).read_text(encoding="utf-8"))
            mlp = build_mlp(meta["in_dim"], meta["hidden"])
            mlp.load_state_dict(torch.load(path / WEIGHTS, map_location="cpu", weights_only=True))
            cue = None
            if meta.get("cue_encoder"):
                cue = load_cue_encoder(meta["cue_encoder"])
                if cue_fingerprint(meta["cue_encoder"]) != meta.get("cue_encoder_fingerprint"):
                    log.warning("the gate at %s was trained with another cue encoder than the one now at %s; "
                                "retrain it (`promem train gate`)", path, meta["cue_encoder"])
            gate = cls(mlp, default_embedder(), meta, cue)
            from reasoner.gate.now_head import NowHead

            gate.now = NowHead.load(path, meta.get("now"), gate.featurizer)
            _CACHE[key] = gate
            return gate

    @property
    def threshold(self) -> float | None:
        return self.meta.get("threshold")

    def score_features(self, feats: np.ndarray) -> np.ndarray:
        import torch

        if len(feats) == 0:
            return np.zeros(0, dtype=np.float32)
        with torch.inference_mode():
            return torch.sigmoid(self.mlp(torch.from_numpy(feats)).squeeze(-1)).numpy().reshape(-1)

    def score(self, past: Sequence[Event], current: Event) -> np.ndarray:
        """Probability per past event that an intention formed there is actionable at `current`."""
        return self.score_features(self.featurizer.features(past, current))

    def token_count(self, events: Sequence[Event]) -> int:
        from reasoner.gate.features import event_line

        tok = getattr(getattr(self.embedder, "model", None), "tokenizer", None)
        texts = [event_line(e) for e in events]
        if tok is None:
            return sum(len(t) // 4 for t in texts)
        return sum(len(ids) for ids in tok(texts, truncation=True, max_length=256)["input_ids"])

    def save(self, path: str | Path, meta: dict) -> None:
        import torch

        from core.jsonio import atomic_write_json

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        torch.save(self.mlp.state_dict(), path / WEIGHTS)
        self.meta = {**self.meta, **meta}
        atomic_write_json(path / META, self.meta)  # last: its presence marks a complete artifact
        with _LOCK:
            _CACHE.pop(str(path.resolve()), None)
