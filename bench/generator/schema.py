"""Typed scenario seeds (the YAML files in seeds/); see README.md for the format."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from bench.generator.text import placeholders
from core.formats import CATEGORIES

# roles that only some personas have: a text naming one needs a persona with that trait
ROLE_TRAITS = {"partner": "partner", "roommate": "roommate", "kid": "kid"}


def implied_traits(texts) -> set[str]:
    names = set().union(*(placeholders(t) for t in texts)) if texts else set()
    return {ROLE_TRAITS[n] for n in names if n in ROLE_TRAITS}


def _as_list(v):
    if v is None:
        return [""]
    if isinstance(v, str):
        return [v]
    return list(v)


class Slot(BaseModel):
    """One event to be written: every text field is a list of paraphrases, one is picked per instance."""

    model_config = ConfigDict(extra="forbid")

    location: list[str] = [""]
    visual: list[str] = [""]
    audio: list[str] = [""]
    hours: Optional[tuple[int, int]] = None  # local hours [from, to) the event may happen in
    requires: list[str] = []  # persona traits the event needs (kid, car, ...), for pooled events
    paired: bool = False  # audio[k] belongs with visual[k] (else any audio goes with any visual)

    _lists = field_validator("location", "visual", "audio", mode="before")(classmethod(lambda cls, v: _as_list(v)))

    @field_validator("hours")
    @classmethod
    def _hours(cls, v):
        if v is not None and not (0 <= v[0] < v[1] <= 24):
            raise ValueError(f"hours {list(v)} must be 0 <= from < to <= 24")
        return v

    @model_validator(mode="after")
    def _content(self) -> "Slot":
        if not any(t.strip() for t in self.visual + self.audio):
            raise ValueError("an event needs some visual or audio text")
        self.requires = sorted(set(self.requires) | implied_traits(self.visual + self.audio + self.location))
        return self


# kinds of hard near miss: the right kind of place that cannot serve this need; the right object but
# no chance to act on it; the same need, but someone else's
NEAR_MISS_KINDS = ("wrong_place", "no_chance", "other_person")


class HardNearMiss(Slot):
    kind: Literal[NEAR_MISS_KINDS]  # type: ignore[valid-type]


class SeedIntention(BaseModel):
    model_config = ConfigDict(extra="forbid")

    formation: Slot
    state_change: Slot
    # the same change told without naming it ("Sam's suit is hanging in the hall" for "collect the suit")
    indirect_state_change: Optional[Slot] = None
    reference: str
    keywords: list[list[str]]

    @field_validator("keywords")
    @classmethod
    def _groups(cls, v):
        if not v or any(not g or any(not s.strip() for s in g) for g in v):
            raise ValueError("keywords must be a non-empty list of non-empty groups of strings")
        return v


class Seed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    category: str
    requires: list[str] = []  # persona traits the scenario needs (kid, car, roommate, ...)
    intentions: list[SeedIntention]
    opportunity: Slot
    near_miss: Slot
    hard_near_misses: list[HardNearMiss] = []  # decision moments that look like a chance to act but are not
    confusers: list[Slot] = []
    gap_days: tuple[int, int] = (1, 3)
    gap_minutes: Optional[tuple[int, int]] = None  # instead of gap_days: decision this long after formation

    @field_validator("category")
    @classmethod
    def _cat(cls, v):
        if v not in CATEGORIES:
            raise ValueError(f"category {v!r} is not one of {', '.join(CATEGORIES)}")
        return v

    @field_validator("intentions")
    @classmethod
    def _n(cls, v):
        if not 1 <= len(v) <= 3:
            raise ValueError("a seed has 1 to 3 intentions")
        return v

    @model_validator(mode="after")
    def _traits(self) -> "Seed":
        slots = [self.opportunity, self.near_miss, *self.hard_near_misses]
        slots += [s for it in self.intentions for s in (it.formation, it.state_change, it.indirect_state_change) if s]
        need = set(self.requires).union(*(s.requires for s in slots))
        need |= implied_traits([it.reference for it in self.intentions])
        self.requires = sorted(need)
        return self

    @field_validator("gap_minutes")
    @classmethod
    def _gap_min(cls, v):
        if v is not None and not 60 <= v[0] <= v[1] <= 1440:
            raise ValueError(f"gap_minutes {list(v)} must satisfy 60 <= min <= max <= 1440")
        return v

    @field_validator("gap_days")
    @classmethod
    def _gap(cls, v):
        if not 0 <= v[0] <= v[1] <= 4:
            raise ValueError(f"gap_days {list(v)} must satisfy 0 <= min <= max <= 4 (timelines span 1-5 days)")
        return v
