"""CPMBench instances -> what the recipes train on: instances read from a file, scenario keys,
the held-out split and the cross-fitting folds, and the labelled examples of each model.

Variants of one scenario share their timeline, so held-out splits and folds are made by
scenario (group_key), never by instance: nothing of a held-out scenario leaks into training.
Inference never needs this module; what it computes at decision time lives beside the models
(reasoner/gate/features.py, memory/construct/link_model.py).
"""
from __future__ import annotations

import hashlib
import logging
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from core.formats import Event, Instance, read_records
from training.errors import TrainingError

log = logging.getLogger(__name__)


# -- instances, scenarios, splits -------------------------------------------------------------
def load_instances(path: str | Path, limit: Optional[int] = None) -> list[Instance]:
    """The valid instances of a JSONL file (the first `limit` of them); bad lines are skipped with a warning."""
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"no training data at {path}; make it with "
                            f"`promem bench generate --split train --n 400 -o {path}`")
    good, bad = read_records(path, Instance)
    for err in bad:
        log.warning("skipping %s", err)
    if not good:
        raise TrainingError(f"{path} holds no valid instances")
    return [inst for _, inst in good][:limit]


def data_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def group_key(inst: Instance) -> str:
    """The scenario an instance was generated or written from: its variants stay on one side of a split."""
    extra = inst.model_extra or {}
    seed = extra.get("seed")
    if isinstance(seed, str) and seed:
        return seed
    if isinstance(extra.get("scenario"), str) and extra["scenario"]:  # a hand-written pack's
        return f"{extra.get('pack') or 'pack'}:{extra['scenario']}"
    return re.sub(r"-\d+-(positive|negative|no_formation|state_change)$", "", inst.id) or inst.persona


def split(instances: Sequence[Instance], held_out: float, seed: int) -> tuple[list[Instance], list[Instance]]:
    """(train, held out): the scenarios shuffled with `seed`, the first `held_out` share of them
    held out (at least one when held_out > 0 and there are two or more scenarios)."""
    groups = sorted({group_key(i) for i in instances})
    random.Random(seed).shuffle(groups)
    n_val = max(1, int(round(len(groups) * held_out))) if held_out > 0 and len(groups) > 1 else 0
    val = set(groups[:n_val])
    return [i for i in instances if group_key(i) not in val], [i for i in instances if group_key(i) in val]


def scenario_folds(instances: Sequence[Instance], folds: int, seed: int) -> dict[str, int]:
    """instance id -> fold: the scenarios shuffled with `seed` and dealt round-robin into `folds`
    (one fold when folds < 2), so that the variants of one scenario stay together."""
    scenarios = sorted({group_key(i) for i in instances})
    random.Random(seed).shuffle(scenarios)
    fold = {s: n % max(1, folds) for n, s in enumerate(scenarios)}
    return {i.id: fold[group_key(i)] for i in instances}


# -- event roles (linker and gate) --------------------------------------------------------------
def role_examples(instances: Sequence[Instance], role: str) -> list[tuple[str, int]]:
    """Every distinct event text, 1 if it plays `role` in some instance, else 0 (ordinary events,
    near misses and look-alike confusers included)."""
    label: dict[str, int] = {}
    for inst in instances:
        if role == "opportunity":
            marked = {inst.decision_event} if inst.variant in ("positive", "state_change") else set()
        else:
            marked = {getattr(it, role) for it in inst.intentions}
        for e in inst.events:
            label[e.text()] = max(label.get(e.text(), 0), int(e.id in marked))
    return list(label.items())


# -- cue encoder --------------------------------------------------------------------------------
@dataclass
class CueExample:
    query: str  # the opportunity (decision moment)
    target: str  # the formation event it should bring back
    others: list[str]  # other past events of the same timeline (hard negatives, ranking distractors)


def cue_examples(instances: Sequence[Instance]) -> list[CueExample]:
    """(opportunity -> formation) pairs: positive and state_change moments are opportunities."""
    out, seen = [], set()
    for inst in instances:
        if inst.variant not in ("positive", "state_change"):
            continue
        dec = inst.event(inst.decision_event)
        for it in inst.intentions:
            form = inst.event(it.formation)
            key = (dec.text(), form.text())
            if key in seen:
                continue
            seen.add(key)
            skip = {it.formation, inst.decision_event, it.state_change}
            others = [e.text() for e in inst.events if e.id not in skip and e.dt < dec.dt]
            out.append(CueExample(dec.text(), form.text(), others))
    return out


# -- linker -------------------------------------------------------------------------------------
@dataclass
class PairExample:
    earlier: str
    later: str
    label: int


def link_examples(instances: Sequence[Instance], negatives: int, seed: int) -> list[PairExample]:
    """(formation, state change) positives; (formation, other later event) and (other, state change) negatives."""
    rng = random.Random(seed)
    out, seen = [], set()

    def put(a: Event, b: Event, y: int) -> None:
        key = (a.text(), b.text())
        if key not in seen:
            seen.add(key)
            out.append(PairExample(a.text(), b.text(), y))

    for inst in instances:
        for it in inst.intentions:
            form = inst.event(it.formation)
            later = [e for e in inst.events if e.dt > form.dt and e.id != it.state_change]
            if it.state_change:
                sc = inst.event(it.state_change)
                put(form, sc, 1)
                before = [e for e in inst.events if e.dt < sc.dt and e.id != it.formation]
                for e in rng.sample(before, min(negatives, len(before))):
                    put(e, sc, 0)
            # the decision moment talks about the same thing but changes nothing: the hardest negative
            if inst.decision_event != it.state_change:
                put(form, inst.event(inst.decision_event), 0)
            for e in rng.sample(later, min(negatives, len(later))):
                put(form, e, 0)
    return out


# -- gate ---------------------------------------------------------------------------------------
# Labelled (past event, current event) pairs for the gate.
# Label 1: the formation against the decision moment of a positive instance, and of a
# state_change instance (before the change, that moment was an opportunity).
# Label 0: the formation against a near-miss moment (negative instances), state-change events,
# a sample of unrelated past events, formations against another scenario's moment, and
# formations against ordinary moments between formation and opportunity (the online loop asks
# the gate at every event, and most of them are no opportunity), and routine repeats: an ordinary
# moment against the earlier ordinary event most like it (going to bed again reads much like
# the last time, yet nothing is due).
# Resolved intentions are not trained on: the linker's state-change links dismiss them.
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
