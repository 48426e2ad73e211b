"""Builds a hand-written pack: <pack>/scenarios.yaml -> 4 CPMBench instances per scenario.

`python -m bench.packs.build independent|voices [-o FILE]` writes the JSONL. Deterministic (no
randomness): the same scenarios.yaml always gives the same bytes. Reads only scenarios.yaml,
never the generator's seeds or pools, so each pack keeps its own voice.

Two packs share this format: `independent` (a test pack no training or tuning reads) and
`voices` (training timelines in other voices than the generator's; training.extra_data).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import Optional

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from bench.judges.keywords import addresses
from core.formats import CATEGORIES, VARIANTS, Event, Instance, Intention, describe_validation_error

HERE = Path(__file__).resolve().parent
PREFIX = {"independent": "ind", "voices": "voc"}  # pack -> instance id prefix


def scenarios_path(pack: str) -> Path:
    return HERE / pack / "scenarios.yaml"


def built_path(pack: str) -> Path:
    return HERE / pack / f"{pack}.jsonl"


SCENARIOS = scenarios_path("independent")
BUILT = built_path("independent")
MIN_EVENTS, MAX_EVENTS = 12, 30
_AT = re.compile(r"^([1-4]) ([01]\d|2[0-3]):([0-5]\d)$")


class Moment(BaseModel):
    """One hand-written event: `at` is "<day 1-4> HH:MM" local time; `see` / `hear` are caption / transcript."""

    model_config = ConfigDict(extra="forbid")
    at: str
    where: str
    see: str = ""
    hear: str = ""

    @field_validator("at")
    @classmethod
    def _at(cls, v: str) -> str:
        if not _AT.match(v):
            raise ValueError(f"'at' {v!r} must read '<day 1-4> HH:MM'")
        return v

    @model_validator(mode="after")
    def _content(self) -> "Moment":
        if not (self.see.strip() or self.hear.strip()):
            raise ValueError(f"the event at {self.at!r} needs a 'see' or a 'hear' text")
        return self

    def key(self) -> tuple[int, str]:
        d, hm = self.at.split()
        return int(d), hm


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    category: str
    persona: str
    utc_offset: str
    start: date
    background: list[Moment]
    formation: Moment
    instead: Optional[Moment] = None
    state_change: Moment
    opportunity: Moment
    near_miss: Moment
    reference: str
    keywords: list[list[str]]

    @field_validator("category")
    @classmethod
    def _cat(cls, v: str) -> str:
        if v not in CATEGORIES:
            raise ValueError(f"category {v!r} is not one of {', '.join(CATEGORIES)}")
        return v

    @field_validator("utc_offset")
    @classmethod
    def _off(cls, v: str) -> str:
        if not re.match(r"^[+-](0\d|1[0-4]):(00|30|45)$", v):
            raise ValueError(f"utc_offset {v!r} must read like +05:30")
        return v


class PackError(ValueError):
    pass


def load_scenarios(path: str | Path = SCENARIOS) -> list[Scenario]:
    """All scenarios in file order; a bad one is an error naming the file and the scenario."""
    path = Path(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    if not isinstance(data, list):
        raise PackError(f"{path}: expected a YAML list of scenarios")
    out: list[Scenario] = []
    seen: set[str] = set()
    for n, obj in enumerate(data, start=1):
        ident = obj.get("id") if isinstance(obj, dict) else None
        where = f"{path}: scenario #{n} ({ident})"
        try:
            sc = Scenario.model_validate(obj)
        except ValidationError as exc:
            raise PackError(f"{where}: {describe_validation_error(exc)}") from None
        if sc.id in seen:
            raise PackError(f"{where}: duplicate scenario id")
        seen.add(sc.id)
        if not addresses(sc.reference, sc.keywords):
            raise PackError(f"{where}: reference {sc.reference!r} fails its own keywords {sc.keywords}")
        out.append(sc)
    return out


def _moments(sc: Scenario, variant: str) -> list[tuple[str, Moment]]:
    """(role, moment) pairs of one variant, decision last; roles name formation / state_change / decision."""
    decision = sc.near_miss if variant == "negative" else sc.opportunity
    # The timeline ends at the decision: background after it belongs to no variant's past.
    picked = [("background", m) for m in sc.background if m.key() < decision.key()]
    if variant == "no_formation":
        if sc.instead is not None:
            picked.append(("background", sc.instead))
    else:
        picked.append(("formation", sc.formation))
    if variant == "state_change":
        picked.append(("state_change", sc.state_change))
    picked.sort(key=lambda rm: rm[1].key())
    return picked + [("decision", decision)]


def _check(moments: list[tuple[str, Moment]], where: str) -> None:
    """The timeline rules of one variant: strictly increasing times, 12-30 events, no event twice."""
    keys = [m.key() for _, m in moments]
    for a, b in zip(keys, keys[1:]):
        if not a < b:
            raise PackError(f"{where}: times must strictly increase; '{a[0]} {a[1]}' then '{b[0]} {b[1]}'")
    if not MIN_EVENTS <= len(moments) <= MAX_EVENTS:
        raise PackError(f"{where}: {len(moments)} events; a timeline holds {MIN_EVENTS}-{MAX_EVENTS}")
    texts = [(m.where, m.see, m.hear) for _, m in moments]
    if len(set(texts)) != len(texts):
        raise PackError(f"{where}: an event repeats within the timeline")


def build_instances(scenarios: list[Scenario], pack: str = "independent") -> list[Instance]:
    out: list[Instance] = []
    for sc in scenarios:
        for variant in VARIANTS:
            where = f"scenario {sc.id} ({variant})"
            moments = _moments(sc, variant)
            _check(moments, where)
            events: list[Event] = []
            ids: dict[str, str] = {}
            for i, (role, m) in enumerate(moments, start=1):
                d, hm = m.key()
                day = sc.start + timedelta(days=d - 1)
                eid = f"e{i:02d}"
                ids[role] = eid
                events.append(Event(id=eid, time=f"{day.isoformat()}T{hm}:00{sc.utc_offset}", location=m.where,
                                    visual=m.see, audio=m.hear))
            intentions = [] if variant == "no_formation" else [Intention(
                id="i1", formation=ids["formation"], state_change=ids.get("state_change"),
                reference=sc.reference, keywords=sc.keywords)]
            out.append(Instance(id=f"{PREFIX[pack]}-{sc.id}-{variant}", category=sc.category, variant=variant,
                                persona=sc.persona, events=events, decision_event=ids["decision"],
                                intentions=intentions, scenario=sc.id, pack=pack))
    return out


def to_jsonl(instances: list[Instance]) -> str:
    return "".join(json.dumps(i.dump(), ensure_ascii=False) + "\n" for i in instances)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.packs.build", description=__doc__.splitlines()[0])
    ap.add_argument("pack", choices=sorted(PREFIX), help="which pack")
    ap.add_argument("-o", "--output", help="JSONL to write (default bench/packs/<pack>/<pack>.jsonl)")
    ap.add_argument("--scenarios", help="hand-written source (default bench/packs/<pack>/scenarios.yaml)")
    args = ap.parse_args(argv)
    args.output = args.output or str(built_path(args.pack))
    try:
        instances = build_instances(load_scenarios(args.scenarios or scenarios_path(args.pack)), args.pack)
    except PackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    Path(args.output).write_text(to_jsonl(instances), encoding="utf-8")
    print(f"wrote {len(instances)} instances to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
