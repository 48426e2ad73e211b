"""LLM reasoner: renders the versioned prompt, asks a chat backend, parses the decision.

Backends come from core.providers.build_llm (openai = any OpenAI-compatible endpoint such as
vLLM with --enable-lora, where cfg.llm.model names the LoRA adapter; transformers = local
base weights + a PEFT adapter). Failures never raise: they answer silence with "error".
"""
from __future__ import annotations

import logging
import time
from typing import Sequence

from core.formats import Decision, Event
from core.providers import build_llm
from core.providers.llm_openai import LLMError
from core.recall import Recalled
from reasoner.parse import ParseError, parse_output
from reasoner.render import render_messages
from core.tokens import count_message_tokens

log = logging.getLogger(__name__)


class LLMReasoner:
    def __init__(self, cfg, llm=None):
        self.cfg = cfg
        self.rcfg = cfg.reasoner
        self._llm = llm

    @property
    def llm(self):
        # Built lazily so that a cascade whose gate dismisses everything never loads the model.
        if self._llm is None:
            self._llm = build_llm(self.rcfg.llm)
        return self._llm

    def decide(self, persona: str, past: Sequence[Recalled], current: Event) -> Decision:
        retrieved = [r.event.id for r in past]
        messages = render_messages(persona, past, current, self.rcfg.prompt)
        t0 = time.perf_counter()
        extra = {"llm_called": True, "context_tokens": count_message_tokens(messages)}
        try:
            raw = self.llm.chat(messages)
        except (LLMError, ValueError, OSError) as exc:
            log.warning("event %s: model call failed, staying silent: %s", current.id, exc)
            return self._silent(current, retrieved, t0, error=f"llm: {exc}", **extra)
        try:
            parsed = parse_output(raw, known_ids=retrieved)
        except ParseError as exc:
            log.warning("event %s: unparseable model output, staying silent: %s", current.id, exc)
            return self._silent(current, retrieved, t0, error=f"parse: {exc}", raw_output=raw[:500], **extra)
        for w in parsed.warnings:
            log.info("event %s: %s", current.id, w)
        return Decision(
            event_id=current.id, assist=parsed.assist, message=parsed.message, evidence=parsed.evidence,
            retrieved=retrieved, timing_ms={"reason": (time.perf_counter() - t0) * 1000},
            reasoning=parsed.reasoning, **extra,
        )

    @staticmethod
    def _silent(current, retrieved, t0, error: str, **extra) -> Decision:
        return Decision(event_id=current.id, assist=False, message=None, evidence=[], retrieved=retrieved,
                        timing_ms={"reason": (time.perf_counter() - t0) * 1000}, error=error, **extra)
