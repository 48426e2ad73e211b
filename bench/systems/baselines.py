"""Baseline systems: no memory, full context, and top-k retrieval by BM25 or MiniLM similarity."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

import numpy as np

from core.formats import Event, Instance
from core.recall import Recalled


def _top_k_in_time_order(past: Sequence[Event], scores: np.ndarray, k: int, path: str) -> list[Recalled]:
    if not past or k <= 0:
        return []
    # Ties go to the more recent event: of two equal matches, the later one is likelier current.
    order = sorted(range(len(past)), key=lambda i: (-float(scores[i]), -i))[:k]
    return [Recalled(event=past[i], score=float(scores[i]), path=path) for i in sorted(order)]


class NoMemory:
    name = "no-memory"
    last_timing: dict[str, float] = {}  # recall() is timed whole by the harness

    def __init__(self, cfg=None):
        pass

    def recall(self, instance: Instance, past: Sequence[Event], current: Event) -> list[Recalled]:
        return []

    def close(self) -> None:
        pass


class FullContext:
    """All past events, the most recent ones that fit into cfg.bench.context_tokens."""

    name = "full-context"
    last_timing: dict[str, float] = {}  # recall() is timed whole by the harness

    def __init__(self, cfg):
        from core.tokens import count_tokens

        self.budget = cfg.bench.context_tokens
        self.count = count_tokens

    def recall(self, instance: Instance, past: Sequence[Event], current: Event) -> list[Recalled]:
        used = self.count(current.text())
        kept: list[Event] = []
        for ev in reversed(past):
            t = self.count(ev.text())
            if used + t > self.budget:
                break
            used += t
            kept.append(ev)
        return [Recalled(event=ev, score=1.0, path="all") for ev in reversed(kept)]

    def close(self) -> None:
        pass


_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def bm25_tokens(text: str) -> list[str]:
    # Without stop words, BM25 ranks long events by "the", "a", "with" rather than by content.
    stop = _stop_words()
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


class RagBM25:
    name = "rag-bm25"
    last_timing: dict[str, float] = {}  # recall() is timed whole by the harness

    def __init__(self, cfg):
        from rank_bm25 import BM25Okapi

        self.k = cfg.memory.retrieval.k
        self.bm25 = BM25Okapi
        _stop_words()  # loaded here so the first decision's timing is not the import's

    def recall(self, instance: Instance, past: Sequence[Event], current: Event) -> list[Recalled]:
        if not past:
            return []
        BM25Okapi = self.bm25

        corpus = [bm25_tokens(ev.text()) or ["_"] for ev in past]
        scores = BM25Okapi(corpus).get_scores(bm25_tokens(current.text()))
        return _top_k_in_time_order(past, np.asarray(scores), self.k, "bm25")

    def close(self) -> None:
        pass


class RagEmbed:
    name = "rag-embed"
    last_timing: dict[str, float] = {}  # recall() is timed whole by the harness

    def __init__(self, cfg):
        from core.providers import build_embedder

        self.k = cfg.memory.retrieval.k
        self.embedder = build_embedder(cfg.memory.embedder)

    def recall(self, instance: Instance, past: Sequence[Event], current: Event) -> list[Recalled]:
        if not past:
            return []
        # the embedder keeps vectors by text: imported conversations recur across instances
        vecs = self.embedder.encode([ev.text() for ev in past] + [current.text()])
        scores = vecs[:-1] @ vecs[-1]  # vectors are L2-normalised: inner product = cosine
        return _top_k_in_time_order(past, scores, self.k, "embed")

    def close(self) -> None:
        pass
