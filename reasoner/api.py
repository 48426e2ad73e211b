"""The reasoner contract: (persona, recalled past, current event) -> Decision (docs/formats.md section 4).

Backends register under kind "reasoner" and are chosen by cfg.reasoner.backend:
  gate     the on-device gate trained here (CPU profile)
  llm      a chat model (OpenAI-compatible endpoint or local transformers + peft)
  cascade  the gate first; only moments it does not dismiss reach the LLM
A backend is a class built from the whole config (core.config.Config); `Reasoner` below is
its contract.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from core import registry
from core.formats import Decision, Event
from core.recall import Recalled

registry.register("reasoner", "gate", "reasoner.gate.reasoner:GateReasoner")
registry.register("reasoner", "llm", "reasoner.llm_reasoner:LLMReasoner")
registry.register("reasoner", "cascade", "reasoner.cascade:CascadeReasoner")


@runtime_checkable
class Reasoner(Protocol):
    def decide(self, persona: str, past: Sequence[Recalled], current: Event) -> Decision:
        """Decide at `current` from the recalled past (time order). The Decision has event_id
        current.id, `retrieved` = the ids of `past` in the order given, evidence among them, and
        its diagnostics set (llm_called, context_tokens). A model failure answers silence with
        `error` set rather than raising."""
        ...


def build_reasoner(cfg) -> Reasoner:
    """cfg: core.config.Config (the whole profile: backends read their own sections)."""
    return registry.create("reasoner", cfg.reasoner.backend, cfg)
