"""Turning one seed into one timeline instance of a given variant."""
from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from bench.generator.pools import UTC_OFFSETS, Pools
from bench.generator.schema import Seed, SeedIntention, Slot
from bench.generator.text import ROLES, fill, keywords_match
from core.formats import Event, Instance, Intention
from core.timeutil import format_time

MIN_EVENTS, MAX_EVENTS = 20, 60
DEFAULT_HOURS = (8, 21)
FIRST_HOUR = 6  # nothing before 6:00 on the first day


@dataclass
class _Planned:
    minute: int  # minutes since midnight of day 0
    slot: Slot
    role: str  # formation:i, state_change:i, decision, confuser, distractor


def _window(slot: Slot) -> tuple[int, int]:
    lo, hi = slot.hours or DEFAULT_HOURS
    return lo * 60, hi * 60 - 1


def _pick(rng: random.Random, lo: int, hi: int) -> int:
    return rng.randint(lo, hi) if hi >= lo else hi


def _time_in(rng: random.Random, slot: Slot, days: list[int], lo_abs: int, hi_abs: int) -> int:
    """A minute inside the slot's hours on one of `days` (tried in random order), within [lo_abs, hi_abs].

    When no day fits, waking hours (6-23) of any day in range are used, so nothing lands at night.
    """
    wlo, whi = _window(slot)
    for day in rng.sample(days, len(days)):
        lo, hi = max(day * 1440 + wlo, lo_abs), min(day * 1440 + whi, hi_abs)
        if lo <= hi:
            return rng.randint(lo, hi)
    for day in rng.sample(days, len(days)):
        lo, hi = max(day * 1440 + FIRST_HOUR * 60, lo_abs), min(day * 1440 + 23 * 60, hi_abs)
        if lo <= hi:
            return rng.randint(lo, hi)
    return _pick(rng, lo_abs, hi_abs)


def _pick_texts(slot: Slot, rng: random.Random) -> tuple[str, str, str]:
    """One paraphrase; a location list as long as the visual list is read as aligned with it."""
    k = rng.randrange(len(slot.visual))
    location = slot.location[k] if len(slot.location) == len(slot.visual) else rng.choice(slot.location)
    audio = slot.audio[k % len(slot.audio)] if slot.paired else rng.choice(slot.audio)
    return location, slot.visual[k], audio


def _mentions(slot: Slot, groups: list[list[str]]) -> bool:
    """Whether any alternative of the slot names one of the intentions' objects (first keyword groups)."""
    text = " ".join(slot.visual + slot.audio)
    return any(keywords_match(text, [g]) for g in groups)


def _fits(slot: Slot, traits: frozenset[str]) -> bool:
    return set(slot.requires) <= traits


# share of negatives that end on one of the seed's hard near misses (the rest end on its near_miss),
# and of state changes told indirectly ("Sam's suit is hanging in the hall")
HARD_NEGATIVE_SHARE = 2 / 3
INDIRECT_CHANGE_SHARE = 1 / 2


def decision_slot(seed: Seed, variant: str, rng: random.Random, traits: frozenset[str]) -> Slot:
    """The decision moment: the opportunity, or for a negative a near miss (hard ones 2 times in 3)."""
    if variant != "negative":
        return seed.opportunity
    hard = [h for h in seed.hard_near_misses if _fits(h, traits)]
    if hard and rng.random() < HARD_NEGATIVE_SHARE:
        return rng.choice(hard)
    return seed.near_miss


def state_change_slot(it: SeedIntention, rng: random.Random) -> Slot:
    """How a state change is told: about half the time indirectly, when the seed has that wording."""
    if it.indirect_state_change is not None and rng.random() < INDIRECT_CHANGE_SHARE:
        return it.indirect_state_change
    return it.state_change


def build_instance(seed: Seed, variant: str, number: int, rng: random.Random, pools: Pools,
                   confusables: list[Slot]) -> Instance:
    """One timeline; `number` makes the id unique, `confusables` are same-split events of other seeds."""
    personas = [p for p in pools.personas if set(seed.requires) <= p.has]
    if not personas:
        raise ValueError(f"seed {seed.id}: no persona in the pool has traits {seed.requires}")
    persona = rng.choice(personas)
    roles = dict(zip(ROLES, rng.sample(pools.names, len(ROLES))))
    where = f"seed {seed.id}"

    # -- when things happen (minutes from midnight of day 0, local time)
    dec_slot = decision_slot(seed, variant, rng, persona.has)
    start = FIRST_HOUR * 60
    forms: list[int] = []
    if seed.gap_minutes:
        # the decision is tied to the formation's clock ("the meter runs out in two hours")
        lo_gap, hi_gap = seed.gap_minutes
        form_day = rng.randint(0, 4 - (22 * 60 + hi_gap) // 1440)  # the decision stays within 5 days
        latest = max(start + 60, min(22 * 60, 23 * 60 - hi_gap))  # and, when it can, before 23:00
        anchor = _time_in(rng, seed.intentions[0].formation, [form_day], form_day * 1440 + start + 60,
                          form_day * 1440 + latest)
        decision = anchor + rng.randint(lo_gap, hi_gap)
        dec_day = decision // 1440
        if variant != "no_formation":
            for i, it in enumerate(seed.intentions):
                t = anchor if i == 0 else _time_in(rng, it.formation, [form_day], start, anchor + 10)
                forms.append(t)
    else:
        gap = rng.randint(seed.gap_days[0], seed.gap_days[1])
        form_day = rng.randint(0, 4 - gap)
        dec_day = form_day + gap
        wlo, whi = _window(dec_slot)
        earliest_dec = dec_day * 1440 + max(wlo, FIRST_HOUR * 60 + 180 if dec_day == 0 else wlo)
        decision = _pick(rng, earliest_dec, dec_day * 1440 + whi)
        if variant != "no_formation":
            for it in seed.intentions:
                # the formation happens well before the decision, leaving room for a state change
                forms.append(_time_in(rng, it.formation, [form_day], start, decision - 120))
    plan: list[_Planned] = [_Planned(decision, dec_slot, "decision")]
    for i, t in enumerate(forms):
        plan.append(_Planned(t, seed.intentions[i].formation, f"formation:{i}"))
    if variant == "state_change":
        for i, it in enumerate(seed.intentions):
            lo, hi = forms[i] + 20, decision - 20
            days = list(range(forms[i] // 1440, decision // 1440 + 1))
            told = state_change_slot(it, rng)
            plan.append(_Planned(_time_in(rng, told, days, lo, hi), told, f"state_change:{i}"))

    n_events = rng.randint(MIN_EVENTS, MAX_EVENTS)
    # the seed's own confusers mention the intention's object ("oat milk, carton half full"): after the
    # formation they would contradict or resolve it, so they only happen before it
    confuser_end = (min(forms) if forms else decision) - 30
    own = [c for c in seed.confusers if _fits(c, persona.has)] if confuser_end > start + 30 else []
    for c in rng.sample(own, min(len(own), rng.randint(0, 2))):
        plan.append(_Planned(_time_in(rng, c, list(range(confuser_end // 1440 + 1)), start, confuser_end), c,
                             "confuser"))
    # filler must not be an unplanned chance to act on the intention (a coffee-bean aisle after "out of beans")
    objects = [g for it in seed.intentions for g in it.keywords[:1]]
    extras: list[tuple[Slot, str]] = []
    for c in rng.sample(confusables, min(len(confusables), rng.randint(1, 3))):
        if _fits(c, persona.has) and not _mentions(c, objects):
            extras.append((c, "confuser"))
    fitting = [d for d in pools.distractors if _fits(d, persona.has) and not _mentions(d, objects)]
    need = max(0, n_events - len(plan) - len(extras))
    # without replacement: no routine event happens twice in one timeline (the pool holds enough for
    # every persona, pools.MIN_DISTRACTORS; a shorter pool makes a shorter timeline, never a repeat)
    chosen = rng.sample(fitting, min(need, len(fitting)))
    extras += [(d, "distractor") for d in chosen]
    for slot, role in extras:
        plan.append(_Planned(_time_in(rng, slot, list(range(dec_day + 1)), start, decision - 1), slot, role))

    # -- strictly increasing minutes, decision last
    decision_entry = plan[0]
    rest = sorted(plan[1:], key=lambda p: p.minute)
    last = -1
    for p in rest:
        p.minute = max(p.minute, last + 1)
        last = p.minute
    if last >= decision_entry.minute:
        decision_entry.minute = last + rng.randint(5, 40)
    ordered = rest + [decision_entry]

    # -- text and times
    offset = rng.choice(UTC_OFFSETS)
    sign = 1 if offset[0] == "+" else -1
    tz = timezone(sign * timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])))
    day0 = datetime(2026, 1, 1, tzinfo=tz) + timedelta(days=rng.randint(0, 360))
    events: list[Event] = []
    ids: dict[str, str] = {}
    width = max(2, len(str(len(ordered))))
    used_texts: set[tuple[str, str]] = set()
    for n, p in enumerate(ordered, start=1):
        eid = f"e{n:0{width}d}"
        ids.setdefault(p.role, eid)
        for _ in range(6):  # avoid two identical events in one timeline
            location, visual, audio = _pick_texts(p.slot, rng)
            visual, audio = fill(visual, roles, rng, where), fill(audio, roles, rng, where)
            if (visual, audio) not in used_texts:
                break
        used_texts.add((visual, audio))
        t = day0 + timedelta(minutes=p.minute, seconds=rng.randint(0, 59))
        events.append(Event(id=eid, time=format_time(t), location=fill(location, roles, rng, where),
                            visual=visual, audio=audio))

    intentions = []
    if variant != "no_formation":
        for i, it in enumerate(seed.intentions):
            intentions.append(Intention(
                id=f"i{i + 1}", formation=ids[f"formation:{i}"],
                state_change=ids[f"state_change:{i}"] if variant == "state_change" else None,
                reference=fill(it.reference, roles, rng, where),
                keywords=[[fill(s, roles, rng, where) for s in g] for g in it.keywords]))
    return Instance(id=f"{seed.id}-{number:04d}-{variant}", category=seed.category, variant=variant,
                    persona=fill(persona.text, roles, rng, where), events=events, decision_event=ids["decision"],
                    intentions=intentions, seed=seed.id)
