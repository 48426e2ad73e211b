"""CPMBench instances -> training examples for the memory models (cue encoder, linker).

Variants of one scenario share their timeline, so examples are de-duplicated by text and
held-out splits are made by scenario, never by instance (no leakage into the metrics).
"""
from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass
from pathlib import Path

from core.formats import Event, Instance, read_records
from reasoner.gate.pairs import group_key

log = logging.getLogger(__name__)


def load(path: str | Path) -> list[Instance]:
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"training data {path} not found: run `promem bench generate --split train --n 400 -o {path}`")
    good, bad = read_records(path, Instance)
    for err in bad:
        log.warning("skipping %s", err)
    if not good:
        raise SystemExit(f"{path}: no valid instances")
    return [inst for _, inst in good]


def data_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def split(instances: list[Instance], held_out: float, seed: int) -> tuple[list[Instance], list[Instance]]:
    scen = sorted({group_key(i) for i in instances})
    random.Random(seed).shuffle(scen)
    n_val = int(round(len(scen) * held_out)) if len(scen) > 1 else 0
    val = set(scen[:n_val])
    return [i for i in instances if group_key(i) not in val], [i for i in instances if group_key(i) in val]


@dataclass
class CueExample:
    query: str  # the opportunity (decision moment)
    target: str  # the formation event it should bring back
    others: list[str]  # other past events of the same timeline (hard negatives, ranking distractors)


def cue_examples(instances: list[Instance]) -> list[CueExample]:
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


@dataclass
class PairExample:
    earlier: str
    later: str
    label: int


def link_examples(instances: list[Instance], negatives: int, seed: int) -> list[PairExample]:
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
