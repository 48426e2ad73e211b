"""Cascade (GPU profile): the gate runs first; only moments it does not dismiss reach the LLM.

The dismiss level is cfg.reasoner.cascade.dismiss_below (set low, e.g. 0.2, so the gate
only drops moments that are clearly nothing); the LLM then decides with the full recalled
past. Decisions carry "llm_called" so the bench can report the share that reached the LLM.
"""
from __future__ import annotations

import time
from typing import Sequence

from core.formats import Decision, Event
from core.recall import Recalled
from reasoner.gate.reasoner import GateScorer
from reasoner.llm_reasoner import LLMReasoner


class CascadeReasoner:
    def __init__(self, cfg, llm=None):
        self.cfg = cfg
        self.scorer = GateScorer(cfg)
        self.dismiss_below = cfg.reasoner.cascade.dismiss_below
        self.llm = LLMReasoner(cfg, llm=llm)

    def decide(self, persona: str, past: Sequence[Recalled], current: Event) -> Decision:
        t0 = time.perf_counter()
        scored = self.scorer.score(past, current)
        best, gate_tokens = scored.best, scored.tokens
        gate_ms = (time.perf_counter() - t0) * 1000
        if best < self.dismiss_below:
            return Decision(event_id=current.id, assist=False, retrieved=[r.event.id for r in past],
                            timing_ms={"gate": gate_ms, "reason": gate_ms}, llm_called=False,
                            context_tokens=gate_tokens, gate_score=round(best, 4))
        d = self.llm.decide(persona, past, current)
        d.timing_ms = {**d.timing_ms, "gate": gate_ms, "reason": d.timing_ms.get("reason", 0.0) + gate_ms}
        return d.model_copy(update={"context_tokens": (d.context_tokens or 0) + gate_tokens,
                                    "llm_called": True, "gate_score": round(best, 4)})
