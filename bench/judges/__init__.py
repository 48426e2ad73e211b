"""Judges: label each intention of a decision TP/FN/FP/TN (docs/formats.md section 5).

Kind "judge" in core.registry; cfg.bench.judge names the one a run uses:
  keywords  offline keyword groups (cannot credit a state_change follow-up)
  llm       any OpenAI-compatible chat endpoint (cfg.bench.judge_llm), cached on disk
A judge has `name` and `judge(instance, decision) -> dict[intention id, label]`; an
instance without intentions is labelled under bench.metrics.NO_INTENTION.
"""
from __future__ import annotations

from core import registry

registry.register("judge", "keywords", "bench.judges.keywords:KeywordJudge")
registry.register("judge", "llm", "bench.judges.llm:LLMJudge")


class JudgeError(RuntimeError):
    """The judge could not label a decision (endpoint down, unusable answer)."""


def build_judge(cfg, name: str | None = None):
    """cfg: core.config.Config; name overrides cfg.bench.judge."""
    return registry.create("judge", name or cfg.bench.judge, cfg)


def judge_names() -> list[str]:
    return registry.names("judge")
