"""Tiny hand-made CPMBench instances for the bench tests."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from core.formats import Decision, Instance
from tests.support.data import SAMPLE  # noqa: F401  (imported by the bench tests)



def ev(eid: str, hour: int, visual: str, audio: str = "", day: int = 2, location: str = "home") -> dict:
    return {"id": eid, "time": f"2026-03-0{day}T{hour:02d}:00:00-05:00", "location": location,
            "visual": visual, "audio": audio}


def intention(iid: str, formation: str, keywords, state_change=None, reference="Remind the user.") -> dict:
    return {"id": iid, "formation": formation, "state_change": state_change, "reference": reference,
            "keywords": keywords}


def instance(iid: str, variant: str, intentions=(), category: str = "food", events=None) -> dict:
    events = events or [
        ev("e1", 8, "The oat milk carton is empty and goes into the recycling.", "[user] No oat milk again."),
        ev("e2", 9, "Reading the news on a tablet."),
        ev("e3", 12, "Roommate texts: picked up oat milk on the way home.", day=3),
        ev("e4", 18, "Walking past a grocery store with produce crates outside.", day=4, location="street"),
    ]
    return {"id": iid, "category": category, "variant": variant, "persona": "Maya, 29.",
            "events": events, "decision_event": events[-1]["id"], "intentions": list(intentions)}


def model(obj: dict) -> Instance:
    return Instance.model_validate(copy.deepcopy(obj))


def decision(inst: Instance, assist: bool, message: str | None = None, retrieved=(), **extra) -> Decision:
    return Decision(event_id=inst.decision_event, assist=assist, message=message, retrieved=list(retrieved), **extra)


def write_jsonl(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path
