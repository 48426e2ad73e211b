"""SFT examples for the LLM reasoner from CPMBench instances (docs/formats.md section 3).

Input: the reasoner prompt exactly as reasoner.render.render_messages builds it, from the
persona, the past events a retrieval gives at the decision event, and the decision event.
Target: a short reasoning trace plus `Decision: {json}` in the form reasoner/parse.py parses;
assist naming the intention (its `reference`) on positive instances, silence on the others.

Two ways to choose the past (recipe key `past`):
  gold       every gold formation/state_change event plus `distractors` random other past
             events, in time order, state changes linked to their formation as a retrieval with
             expand_links would hand them over. Needs no memory artifacts; fast.
  retrieval  replay the instance's events into a fresh private memory (memory.api.open_memory
             with store None) and retrieve at the decision event, as the benchmark harness does;
             gold events the retrieval missed are added, so a target never rests on evidence the
             prompt does not show (the model must not learn to speak from nothing).
"""
from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from core.formats import Event, Instance
from core.recall import Link, Recalled
from reasoner.render import human_gap, render_messages

log = logging.getLogger(__name__)
PAST_MODES = ("gold", "retrieval")


@dataclass
class SFTExample:
    id: str
    variant: str
    messages: list[dict[str, str]]  # system + user, as the reasoner sends them
    target: str  # the assistant answer to learn
    retrieved: list[str] = field(default_factory=list)
    added_gold: list[str] = field(default_factory=list)  # past=retrieval: gold events retrieval missed, added


def _gold_ids(inst: Instance) -> list[str]:
    ids = []
    for it in inst.intentions:
        ids.append(it.formation)
        if it.state_change:
            ids.append(it.state_change)
    return ids


def _with_links(inst: Instance, events: Iterable[Event], score: float, path: str) -> list[Recalled]:
    sc_of = {it.formation: it.state_change for it in inst.intentions if it.state_change}
    out = []
    for e in sorted(events, key=lambda e: (e.dt, e.id)):
        links = [Link(sc_of[e.id], "state_change", 1.0)] if e.id in sc_of else []
        out.append(Recalled(e, score, path, links=links))
    return out


def gold_past(inst: Instance, rng: random.Random, distractors: int) -> list[Recalled]:
    current = inst.event(inst.decision_event)
    past = [e for e in inst.events if e.id != current.id and e.dt <= current.dt]
    gold = set(_gold_ids(inst))
    others = [e for e in past if e.id not in gold]
    chosen = [e for e in past if e.id in gold] + rng.sample(others, min(distractors, len(others)))
    return _with_links(inst, chosen, 1.0, "gold")


def retrieved_past(inst: Instance, cfg, user_id: Optional[str] = None) -> list[Recalled]:
    from memory.api import open_memory

    current = inst.event(inst.decision_event)
    user = user_id or f"sft-{inst.id}"
    events = [e.model_copy(update={"user_id": user}) for e in inst.events if e.id != current.id]
    mem = open_memory(cfg, None, user)
    try:
        mem.add_many(events)
        got = mem.retrieve(current.model_copy(update={"user_id": user}))
    finally:
        mem.close()
    have = {r.event.id for r in got}
    missing = [inst.event(i) for i in _gold_ids(inst) if i not in have and i != current.id]
    if missing:
        got = got + _with_links(inst, missing, 0.0, "gold")
    # Events go back without the replay's user id, as they were in the instance.
    by_id = {e.id: e for e in inst.events}
    out = [Recalled(by_id[r.event.id], r.score, r.path, r.fact, r.links) for r in got]
    return sorted(out, key=lambda r: (r.event.dt, r.event.id))


def _when(inst: Instance, event_id: str) -> str:
    current = inst.event(inst.decision_event)
    return human_gap(current.dt - inst.event(event_id).dt)


def _place(current: Event) -> str:
    return f" at {current.location}" if current.location else ""


def target_for(inst: Instance, past: Sequence[Recalled]) -> str:
    """The answer to learn: `Reasoning: ...` then `Decision: {...}` (reasoner/prompts/reasoner.v1.txt)."""
    current = inst.event(inst.decision_event)
    shown = {r.event.id for r in past}
    its = inst.intentions
    if inst.variant == "positive" and its:
        forms = [it.formation for it in its]
        parts = [f"In {it.formation} ({_when(inst, it.formation)}) an intention formed: {it.reference.rstrip('.')}."
                 for it in its]
        reasoning = " ".join(parts) + f" Nothing resolved it, and the current moment{_place(current)} is an opportunity to act on it."
        message = " ".join(it.reference.strip() for it in its)
        decision = {"assist": True, "message": message, "evidence": [f for f in forms if f in shown]}
    elif inst.variant == "state_change" and its:
        parts = [f"The intention from {it.formation} ({it.reference.rstrip('.')}) was resolved or changed later in "
                 f"{it.state_change}." for it in its]
        reasoning = " ".join(parts) + " It is no longer open, so it should not be pushed."
        decision = {"assist": False, "message": None, "evidence": []}
    elif inst.variant == "negative" and its:
        parts = [f"In {it.formation} an intention formed ({it.reference.rstrip('.')}) and is still open." for it in its]
        reasoning = " ".join(parts) + f" But the current moment{_place(current)} is no opportunity to act on it."
        decision = {"assist": False, "message": None, "evidence": []}
    else:
        reasoning = (f"No past event holds an unresolved delayed intention that the current moment{_place(current)} "
                     "would serve.")
        decision = {"assist": False, "message": None, "evidence": []}
    return f"Reasoning: {reasoning}\nDecision: {json.dumps(decision, ensure_ascii=False)}"


def build_examples(instances: Sequence[Instance], past: str = "gold", distractors: int = 6, seed: int = 0,
                   cfg=None, prompt: str = "reasoner.v1", progress: bool = True) -> list[SFTExample]:
    """One example per instance; `cfg` (core.config.Config) is needed for past="retrieval"."""
    from tqdm import tqdm

    if past not in PAST_MODES:
        raise ValueError(f"past must be one of {PAST_MODES}, got {past!r}")
    if past == "retrieval" and cfg is None:
        raise ValueError("past='retrieval' needs the config (memory section) to open a memory")
    rng = random.Random(seed)
    out = []
    for inst in tqdm(instances, desc=f"sft examples ({past})", unit="inst", disable=not progress):
        try:
            current = inst.event(inst.decision_event)
            recalled = retrieved_past(inst, cfg) if past == "retrieval" else gold_past(inst, rng, distractors)
        except KeyError as exc:
            log.warning("instance %s: names event %s that it does not hold; skipped", inst.id, exc)
            continue
        messages = render_messages(inst.persona, recalled, current, prompt)
        added = [r.event.id for r in recalled if r.path == "gold"] if past == "retrieval" else []
        out.append(SFTExample(inst.id, inst.variant, messages, target_for(inst, recalled),
                              [r.event.id for r in recalled], added))
    if past == "retrieval":
        n = sum(1 for e in out if e.added_gold)
        log.info("sft examples: retrieval missed a gold event in %d of %d instances (added to their prompts)",
                 n, len(out))
    return out
