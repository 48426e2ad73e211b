"""GPU-profile construction: a chat model writes facts, event cues and time cues, and links events.

Model output is validated JSON; malformed output is retried once, then the event is stored
with its raw facts only and the failure is logged and kept in the store (events.error).
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, Field, ValidationError

from core.formats import Event
from core.jsonio import quote_untrusted as quote
from core.providers import build_llm, shared_embedder
from core.providers.llm_openai import LLMError
from memory import timecues
from memory.construct.base import Candidate
from memory.facts import event_facts
from memory.store import Built, NewCue, NewLink

log = logging.getLogger(__name__)
PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
CUE_PROMPT = "cue_generation.v1.txt"
LINK_PROMPT = "linking.v1.txt"


class FactOut(BaseModel):
    fact: str = Field(min_length=1, max_length=500)
    event_cues: list[str] = Field(default_factory=list, max_length=8)
    time_cues: list[str] = Field(default_factory=list, max_length=8)


class CuesOut(BaseModel):
    facts: list[FactOut] = Field(min_length=1, max_length=20)
    intention: Optional[str] = None


class LinkOut(BaseModel):
    candidate: int
    kind: Literal["state_change", "development"]


class LinksOut(BaseModel):
    links: list[LinkOut] = Field(default_factory=list)


class MalformedOutput(ValueError):
    pass


def extract_json(text: str) -> dict:
    """The JSON object in a model's answer, ignoring <think> blocks and ``` fences around it."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise MalformedOutput(f"no JSON object in output: {text[:200]!r}")
    try:
        obj = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise MalformedOutput(f"invalid JSON ({exc.msg}): {text[start:start + 200]!r}") from None
    if not isinstance(obj, dict):
        raise MalformedOutput("output is not a JSON object")
    return obj


def parse(model: type[BaseModel], text: str):
    try:
        return model.model_validate(extract_json(text))
    except ValidationError as exc:
        raise MalformedOutput(f"JSON does not match the schema: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


class NoUsableAnswer(MalformedOutput):
    """Every attempt of ask_json failed; `attempts` says how, one line each."""

    def __init__(self, what: str, attempts: list[str]):
        super().__init__(f"{what}: " + "; ".join(attempts))
        self.attempts = attempts


def ask_json(llm, prompt: str, model: type[BaseModel], what: str, retry_failed_call: bool = True):
    """The model's answer parsed as `model`, asking once more on malformed output (and, with
    retry_failed_call, on a failed call: timeout, HTTP error); raises NoUsableAnswer after that."""
    errors = []
    for attempt in (1, 2):
        try:
            return parse(model, llm.chat([{"role": "user", "content": prompt}]))
        except (MalformedOutput, LLMError) as exc:
            errors.append(f"attempt {attempt}: {exc}")
            log.debug("%s: %s", what, exc)
            if isinstance(exc, LLMError) and not retry_failed_call:
                break
    raise NoUsableAnswer(what, errors)


def render_event(e: Event) -> str:
    # quoted, so the sensory text reads as data, never as prompt structure
    return quote({"time": e.time, "location": e.location, "seen": e.visual, "heard": e.audio})


class LLMConstructor:
    def __init__(self, cfg, llm=None):
        c = cfg.memory.construction
        self.content = shared_embedder(cfg.memory.embedder)
        self.cue = self.content  # explicit cue texts are situations: the plain sentence space fits them
        self.llm = llm if llm is not None else build_llm(c.llm)
        self.cue_prompt = (PROMPTS / CUE_PROMPT).read_text(encoding="utf-8")
        self.link_prompt = (PROMPTS / LINK_PROMPT).read_text(encoding="utf-8")

    def _ask(self, prompt: str, model: type[BaseModel], what: str):
        return ask_json(self.llm, prompt, model, what)

    def extract(self, events: list[Event]) -> list[Built]:
        drafts = []
        for e in events:
            try:
                out = self._ask(self.cue_prompt.replace("{event}", render_event(e)), CuesOut, f"event {e.id} cues")
                drafts.append((e, out, None))
            except MalformedOutput as exc:
                log.warning("event %s: cue generation failed after a retry; storing its raw facts only (%s)", e.id, exc)
                drafts.append((e, None, str(exc)))
        texts: list[str] = []
        plan = []
        for e, out, err in drafts:
            facts = [f.fact for f in out.facts] if out else event_facts(e)
            cues = [c for f in out.facts for c in f.event_cues] if out else []
            plan.append((len(texts), facts, cues))
            texts += [e.text()] + facts + cues
        vecs = self.content.encode(texts)
        built = []
        for (e, out, err), (at, facts, cues) in zip(drafts, plan):
            b = Built(event=e, ts=e.dt.timestamp(), vec=vecs[at], error=err)
            b.facts = [(f, vecs[at + 1 + j]) for j, f in enumerate(facts)]
            b.cues = [NewCue("event", c, vecs[at + 1 + len(facts) + j]) for j, c in enumerate(cues)]
            if out:
                for f in out.facts:
                    for expr in f.time_cues:
                        for w in timecues.resolve(expr, e.dt):
                            b.cues.append(NewCue("time", w.expression, None, w.start.timestamp(), w.end.timestamp()))
                if out.intention:
                    b.intentions = [(out.intention, 1.0)]
            built.append(b)
        return built

    def link(self, built: Built, candidates: list[Candidate]) -> list[NewLink]:
        if not candidates:
            return []
        listing = "\n".join(f"{n}. [{c.event.time}] {quote(c.fact)}"
                            for n, c in enumerate(candidates, start=1))
        prompt = self.link_prompt.replace("{event}", render_event(built.event)).replace("{candidates}", listing)
        try:
            out = self._ask(prompt, LinksOut, f"event {built.event.id} links")
        except MalformedOutput as exc:
            log.warning("event %s: linking failed after a retry; stored without links (%s)", built.event.id, exc)
            built.error = (built.error + "; " if built.error else "") + str(exc)
            return []
        links = {}
        for ln in out.links:
            if 1 <= ln.candidate <= len(candidates):
                links[candidates[ln.candidate - 1].event.id] = NewLink(candidates[ln.candidate - 1].event.id, ln.kind, 1.0)
            else:
                log.warning("event %s: link to candidate %d ignored (only %d candidates)",
                            built.event.id, ln.candidate, len(candidates))
        return list(links.values())
