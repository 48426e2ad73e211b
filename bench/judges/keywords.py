"""Offline judge: keyword groups with word-boundary, case-insensitive matching (docs/formats.md section 3)."""
from __future__ import annotations

from bench.metrics import NO_INTENTION
from core.formats import Decision, Instance
from core.text import addresses  # noqa: F401 - the judge's rule, defined with the format in core


def silent_labels(instance: Instance, label: str) -> dict[str, str]:
    if not instance.intentions:
        return {NO_INTENTION: label}
    return {it.id: label for it in instance.intentions}


class KeywordJudge:
    name = "keywords"

    def __init__(self, cfg=None):
        self.cfg = cfg

    def judge(self, instance: Instance, decision: Decision) -> dict[str, str]:
        message = (decision.message or "") if decision.assist else ""
        if instance.variant == "positive":
            if not decision.assist:
                return {it.id: "FN" for it in instance.intentions}
            return {it.id: "TP" if addresses(message, it.keywords) else "FN" for it in instance.intentions}
        # Keywords cannot tell a follow-up from a stale push: any response where silence
        # was due is a false alarm, state_change included.
        return silent_labels(instance, "FP" if decision.assist else "TN")
