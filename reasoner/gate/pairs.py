"""Labelled (past event, current event) pairs for the gate from CPMBench instances (docs/formats.md section 3).

Label 1: the formation against the decision moment of a positive instance, and of a
state_change instance (before the change, that moment was an opportunity).
Label 0: the formation against a near-miss moment (negative instances), state-change events,
a sample of unrelated past events, formations against another scenario's moment, and
formations against ordinary moments between formation and opportunity (the online loop asks
the gate at every event, and most of them are no opportunity), and routine repeats: an ordinary
moment against the earlier ordinary event most like it (going to bed again reads much like
the last time, yet nothing is due).
Resolved intentions are not trained on: the linker's state-change links dismiss them.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from core.formats import Event, Instance


@dataclass
class Pair:
    past: Event
    current: Event
    label: int
    instance: str
    kind: str  # formation | near_miss | state_change_event | distractor | other_moment | between | routine


Alike = Callable[[Event, Sequence[Event]], Event]


def same_place(moment: Event, earlier: Sequence[Event]) -> Event:
    """Without embeddings at hand: the latest earlier event at the same place, else the latest."""
    return next((e for e in reversed(earlier) if e.location and e.location == moment.location), earlier[-1])


def instance_pairs(inst: Instance, rng: random.Random, distractors: int = 6, between: int = 3,
                   routine: int = 3, alike: Alike = same_place) -> list[Pair]:
    current = inst.event(inst.decision_event)
    gold = {i.formation for i in inst.intentions} | {i.state_change for i in inst.intentions if i.state_change}
    out: list[Pair] = []
    for it in inst.intentions:
        formation = inst.event(it.formation)
        if inst.variant in ("positive", "state_change"):
            out.append(Pair(formation, current, 1, inst.id, "formation"))
        elif inst.variant == "negative":
            out.append(Pair(formation, current, 0, inst.id, "near_miss"))
        if it.state_change:
            out.append(Pair(inst.event(it.state_change), current, 0, inst.id, "state_change_event"))
    others = [e for e in inst.events if e.id not in gold and e.id != inst.decision_event]
    for e in rng.sample(others, min(distractors, len(others))):
        out.append(Pair(e, current, 0, inst.id, "distractor"))
    for it in inst.intentions:
        formation = inst.event(it.formation)
        moments = [e for e in others if e.dt > formation.dt]
        for e in rng.sample(moments, min(between, len(moments))):
            out.append(Pair(formation, e, 0, inst.id, "between"))
    for moment in rng.sample(others, min(routine, len(others))):
        earlier = [e for e in others if e.dt < moment.dt]
        if earlier:
            out.append(Pair(alike(moment, earlier), moment, 0, inst.id, "routine"))
    return out


def build_pairs(instances: Sequence[Instance], seed: int = 0, distractors: int = 6, other_moments: int = 2,
                between: int = 3, routine: int = 3, alike: Optional[Alike] = None) -> list[Pair]:
    """alike(moment, earlier events) picks a routine negative's past event (default: same place)."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for inst in instances:
        pairs.extend(instance_pairs(inst, rng, distractors, between, routine, alike or same_place))
    # An intention against another scenario's moment: teaches "actionable HERE", not just "is an intention".
    for inst in instances:
        if not inst.intentions:
            continue
        formation = inst.event(inst.intentions[0].formation)
        added = 0
        for other in rng.sample(list(instances), min(other_moments * 3, len(instances))):
            if added >= other_moments:
                break
            if group_key(other) != group_key(inst):
                pairs.append(Pair(formation, other.event(other.decision_event), 0, inst.id, "other_moment"))
                added += 1
    return pairs


def group_key(inst: Instance) -> str:
    """Instances generated from one scenario seed stay on one side of a split."""
    seed = (inst.model_extra or {}).get("seed")
    if isinstance(seed, str) and seed:
        return seed
    return re.sub(r"-\d+-(positive|negative|no_formation|state_change)$", "", inst.id) or inst.persona


def split_instances(instances: Sequence[Instance], held_out: float, seed: int) -> tuple[list[Instance], list[Instance]]:
    groups = sorted({group_key(i) for i in instances})
    rng = random.Random(seed)
    rng.shuffle(groups)
    n_val = max(1, int(round(len(groups) * held_out))) if held_out > 0 and len(groups) > 1 else 0
    val = set(groups[:n_val])
    return [i for i in instances if group_key(i) not in val], [i for i in instances if group_key(i) in val]
