"""LLM judge: any OpenAI-compatible endpoint decides whether a response addresses the intention.

Only responses need a model: silence is FN (positive) or TN (others), and a response at a
negative / no_formation moment is FP whatever it says. The model is asked per intention
(positive: addresses / does_not_address; state_change: pursue_stale / follow_up / unrelated).
Answers are cached on disk by the hash of model + prompt, so reruns and other systems
producing the same message cost nothing.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from string import Template
from typing import Any

from bench.judges import JudgeError
from bench.judges.keywords import silent_labels
from core.config import resolve_path
from core.formats import Decision, Event, Instance
from core.jsonio import atomic_write_json, quote_untrusted as quote

log = logging.getLogger(__name__)

PROMPT_FILE = Path(__file__).resolve().parents[1] / "prompts" / "judge.v1.txt"
VERDICTS = {
    "positive": ("addresses", "does_not_address"),
    "state_change": ("pursue_stale", "follow_up", "unrelated"),
}
LABEL_OF = {"addresses": "TP", "does_not_address": "FN", "pursue_stale": "FP", "follow_up": "TN", "unrelated": "FP"}


def load_prompts(path: Path = PROMPT_FILE) -> dict[str, str]:
    """Sections of the prompt file, split on '### name' lines."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"### (\w+)\s*", line)
        if m:
            current = m.group(1)
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def _event(ev: Event) -> str:
    return quote(ev.text())


def build_messages(instance: Instance, intention_id: str, message: str,
                   prompts: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Chat messages asking about one intention of a positive or state_change instance."""
    prompts = prompts or load_prompts()
    it = next(i for i in instance.intentions if i.id == intention_id)
    formation = instance.event(it.formation)
    decision = instance.event(instance.decision_event)
    fields: dict[str, Any] = {
        "persona": quote(instance.persona),
        "formation": _event(formation), "formation_time": formation.time,
        "decision": _event(decision), "decision_time": decision.time,
        "reference": quote(it.reference), "response": quote(message),
    }
    if instance.variant == "state_change":
        change = instance.event(it.state_change)
        fields.update({"state_change": _event(change), "state_change_time": change.time})
        template = prompts["state_change"]
    elif instance.variant == "positive":
        template = prompts["positive"]
    else:
        raise ValueError(f"instance {instance.id!r}: the LLM judge only grades positive and state_change responses")
    return [{"role": "system", "content": prompts["system"]},
            {"role": "user", "content": Template(template).substitute(fields)}]


def parse_verdict(text: str, variant: str) -> str:
    """The verdict in a model answer: a JSON object's "verdict", else the one allowed label named.

    Raises ValueError when the answer names none or several."""
    allowed = VERDICTS[variant]
    text = re.sub(r"<think>.*?(</think>|$)", "", text or "", flags=re.DOTALL).strip()
    for m in re.finditer(r"\{[^{}]*\}", text):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        v = str(obj.get("verdict", "")).strip().lower().replace("-", "_").replace(" ", "_") if isinstance(obj, dict) else ""
        if v in allowed:
            return v
    norm = text.lower().replace("-", "_")
    # Longest first, so "does_not_address" is not also read as "addresses".
    found = []
    for label in sorted(allowed, key=len, reverse=True):
        if re.search(r"\b" + label.replace("_", "[_ ]") + r"\b", norm):
            found.append(label)
            norm = re.sub(r"\b" + label.replace("_", "[_ ]") + r"\b", " ", norm)
    if len(found) == 1:
        return found[0]
    raise ValueError(f"no single verdict among {', '.join(allowed)} in the answer {text[:200]!r}")


class LLMJudge:
    name = "llm"

    def __init__(self, cfg, llm=None, cache_dir: str | Path | None = None):
        self.llm_cfg = cfg.bench.judge_llm
        self._llm = llm  # built on first use, so a fully cached run needs no server
        self.cache_dir = Path(cache_dir) if cache_dir else resolve_path(cfg.bench.cache_dir) / "judge"
        self.prompts = load_prompts()
        self.answered = 0  # verdicts obtained (asked or cached): the harness stops early while it is 0

    @property
    def llm(self):
        if self._llm is None:
            from core.providers import build_llm

            self._llm = build_llm(self.llm_cfg)
        return self._llm

    def cache_key(self, messages: list[dict[str, str]]) -> str:
        blob = json.dumps({"model": self.llm_cfg.model, "messages": messages}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def ask(self, instance: Instance, intention_id: str, message: str) -> str:
        messages = build_messages(instance, intention_id, message, self.prompts)
        key = self.cache_key(messages)
        path = self.cache_dir / key[:2] / f"{key}.json"
        if path.is_file():
            try:
                verdict = json.loads(path.read_text(encoding="utf-8"))["verdict"]
                self.answered += 1
                return verdict
            except (OSError, ValueError, KeyError):
                log.warning("judge cache entry %s unreadable; asking again", path)
        from core.providers.llm_openai import LLMError

        llm = self.llm  # a config error (no base_url) surfaces here, not as a retried failure
        problems = []
        for attempt in range(2):  # one retry: sampling noise and transient errors are common
            try:
                raw = llm.chat(messages, max_tokens=self.llm_cfg.max_tokens)
                verdict = parse_verdict(raw, instance.variant)
            except (LLMError, ValueError) as exc:
                problems.append(str(exc))
                continue
            atomic_write_json(path, {"verdict": verdict, "raw": raw, "model": self.llm_cfg.model})
            self.answered += 1
            return verdict
        raise JudgeError(f"instance {instance.id!r} intention {intention_id!r}: LLM judge failed twice: "
                         + " | ".join(problems))

    def judge(self, instance: Instance, decision: Decision) -> dict[str, str]:
        if not decision.assist:
            if instance.variant == "positive":
                return {it.id: "FN" for it in instance.intentions}
            return silent_labels(instance, "TN")
        message = decision.message or ""
        if instance.variant in VERDICTS:
            return {it.id: LABEL_OF[self.ask(instance, it.id, message)] for it in instance.intentions}
        return silent_labels(instance, "FP")
