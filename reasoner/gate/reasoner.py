"""The gate as a reasoner (CPU profile): score each recalled event against the moment; speak
when the best score clears the calibrated threshold, with a message composed from the evidence.

The linker's state-change links are applied before scoring: an intention with a state change
is never pushed, and the event that changed it is not itself a fresh intention.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core.config import resolve_path
from core.formats import Decision, Event
from core.recall import Recalled
from core.text import content_words
from reasoner.gate.compose import compose_message, compose_now
from reasoner.gate.model import GateModel

log = logging.getLogger(__name__)


@dataclass
class Scored:
    candidates: list[Recalled]
    scores: np.ndarray
    resolved: list[str]  # recalled events dismissed because a state change resolved them
    tokens: int

    @property
    def best(self) -> float:
        return float(self.scores.max()) if len(self.scores) else 0.0


def has_content(event: Event, min_words: int) -> bool:
    """Whether the moment's caption and transcript hold at least min_words content words."""
    return len(content_words(f"{event.visual or ''} {event.audio or ''}")) >= min_words


def split_resolved(past: Sequence[Recalled]) -> tuple[list[Recalled], list[str]]:
    """(open candidates, ids dismissed): drops resolved intentions and the events that resolved them."""
    changers = {link.event_id for r in past for link in r.links if link.kind == "state_change"}
    open_, dismissed = [], []
    for r in past:
        if r.event.id in changers or any(link.kind == "state_change" for link in r.links):
            dismissed.append(r.event.id)
        else:
            open_.append(r)
    return open_, dismissed


class GateScorer:
    """Scores (recalled event, moment) pairs; shared by the gate reasoner and the cascade."""

    def __init__(self, cfg):
        self.gcfg = cfg.reasoner.gate
        self.model = GateModel.load(resolve_path(self.gcfg.path), cfg.memory.embedder)
        cal = self.model.threshold
        self.threshold = float(cal) if (cal is not None and self.gcfg.use_calibrated) else self.gcfg.threshold

    def score(self, past: Sequence[Recalled], current: Event) -> Scored:
        earlier = [r for r in past if r.event.id != current.id and r.event.dt <= current.dt]
        open_, dismissed = split_resolved(earlier)
        # Bounded work per moment: the best-recalled candidates first (stable, so ties keep the given order).
        cands = sorted(open_, key=lambda r: -r.score)[: self.gcfg.max_candidates]
        events = [r.event for r in cands]
        scores = self.model.score(events, current)
        return Scored(cands, scores, dismissed, self.model.token_count([*events, current]) if events else 0)


def load_thing_reader(path: str | None):
    """The trained thing reader, or None (with a warning naming the command) when there is none."""
    if not path:
        return None
    from core.artifacts import ArtifactError
    from reasoner.gate.thing_reader import load_reader

    try:
        return load_reader(resolve_path(path))
    except ArtifactError as exc:
        log.warning("%s; messages are composed by rule alone meanwhile", exc)
        return None


class GateReasoner:
    def __init__(self, cfg):
        self.cfg = cfg
        self.scorer = GateScorer(cfg)
        self.reader = load_thing_reader(cfg.reasoner.gate.thing_reader)

    @property
    def threshold(self) -> float:
        return self.scorer.threshold

    def decide(self, persona: str, past: Sequence[Recalled], current: Event) -> Decision:
        t0 = time.perf_counter()
        retrieved = [r.event.id for r in past]
        s = self.scorer.score(past, current)
        ranked = sorted(zip(s.candidates, s.scores), key=lambda x: -x[1])
        fired = [(r, float(sc)) for r, sc in ranked if sc >= self.threshold][: self.cfg.reasoner.gate.max_evidence]
        extra = {"llm_called": False, "context_tokens": s.tokens, "gate_score": round(s.best, 4)}
        if s.resolved:
            extra["resolved"] = s.resolved
        if not fired and not s.candidates and not s.resolved:
            return self._decide_now(current, retrieved, extra, t0)
        timing = {"reason": (time.perf_counter() - t0) * 1000}
        if not fired:
            return Decision(event_id=current.id, assist=False, retrieved=retrieved, timing_ms=timing, **extra)
        said = compose_message([r.event for r, _ in fired], current, self.reader)  # evidence: the events it rests on
        return Decision(event_id=current.id, assist=True, message=said.message,
                        evidence=said.evidence, retrieved=retrieved, timing_ms=timing, **extra)

    def _decide_now(self, current: Event, retrieved: list[str], extra: dict, t0: float) -> Decision:
        """No open past event to weigh: the now head (if trained) asks whether the moment alone calls
        for help. Only here, so it cannot add false detections where the pair gate has a past to judge."""
        head = self.scorer.model.now if self.cfg.reasoner.gate.use_now_head else None
        if head is not None and not has_content(current, self.cfg.reasoner.gate.now_min_content_words):
            head = None  # too little said or seen to act on, whatever the head would score
        if head is None:
            timing = {"reason": (time.perf_counter() - t0) * 1000}
            return Decision(event_id=current.id, assist=False, retrieved=retrieved, timing_ms=timing, **extra)
        score = head.score(current)
        extra = {**extra, "now_score": round(score, 4)}
        timing = {"reason": (time.perf_counter() - t0) * 1000}
        if score < head.threshold:
            return Decision(event_id=current.id, assist=False, retrieved=retrieved, timing_ms=timing, **extra)
        said = compose_now(current)
        return Decision(event_id=current.id, assist=True, message=said.message,
                        evidence=said.evidence, retrieved=retrieved, timing_ms=timing, **extra)
