"""Validation of CPMBench files (docs/formats.md section 3): every rule, every line, one message each.

Checks run on the raw JSON object, not only through the pydantic model, so that one bad
instance reports all its problems at once and a malformed line never hides the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.formats import CATEGORIES, VARIANTS, Instance, describe_validation_error
from core.jsonio import LineError, iter_jsonl
from core.timeutil import parse_time
from pydantic import ValidationError

INSTANCE_KEYS = ("id", "category", "variant", "persona", "events", "decision_event", "intentions")
INTENTION_KEYS = ("id", "formation", "reference", "keywords")
NEEDS_INTENTIONS = ("positive", "negative", "state_change")


@dataclass
class Violation:
    path: str
    line: int
    instance_id: str | None
    rule: str
    message: str

    def __str__(self) -> str:
        ident = repr(self.instance_id) if self.instance_id is not None else "(no id)"
        return f"{self.path}:{self.line}: instance {ident}: [{self.rule}] {self.message}"


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and v.strip() != ""


class _Checker:
    """Collects the violations of one instance object."""

    def __init__(self, path: str, line: int, obj: dict):
        self.path, self.line, self.obj = path, line, obj
        ident = obj.get("id")
        self.ident = ident if isinstance(ident, str) else None
        self.out: list[Violation] = []

    def add(self, rule: str, message: str) -> None:
        self.out.append(Violation(self.path, self.line, self.ident, rule, message))

    def run(self) -> list[Violation]:
        o = self.obj
        for key in INSTANCE_KEYS:
            if key not in o:
                self.add("required_key", f"missing key '{key}'")
        if "id" in o and not _nonempty_str(o["id"]):
            self.add("type", "'id' must be a non-empty string")
        if "persona" in o and not isinstance(o["persona"], str):
            self.add("type", "'persona' must be a string")
        if "category" in o and o["category"] not in CATEGORIES:
            self.add("category", f"category {o['category']!r} is not one of {', '.join(CATEGORIES)}")
        variant = o.get("variant")
        if "variant" in o and variant not in VARIANTS:
            self.add("variant", f"variant {variant!r} is not one of {', '.join(VARIANTS)}")
        positions = self._events(o.get("events"))
        decision = o.get("decision_event")
        dpos = None
        if "decision_event" in o:
            if not isinstance(decision, str) or decision not in positions:
                self.add("decision_event_ref", f"decision_event {decision!r} names no event of this instance")
            else:
                dpos = positions[decision]
                if dpos != len(o["events"]) - 1:
                    self.add("decision_event_last", f"decision_event {decision!r} is event {dpos + 1} of "
                             f"{len(o['events'])}; it must be the last event")
        self._intentions(o.get("intentions"), variant, positions, dpos)
        return self.out

    def _events(self, events: Any) -> dict[str, int]:
        positions: dict[str, int] = {}
        if events is None:
            return positions
        if not isinstance(events, list) or not events:
            self.add("events", "'events' must be a non-empty list")
            return positions
        prev = None
        for i, ev in enumerate(events):
            where = f"events[{i}]"
            if not isinstance(ev, dict):
                self.add("type", f"{where} must be an object")
                continue
            eid = ev.get("id")
            if self._keys_and_id(where, ev, ("id", "time"), "event", positions):
                positions[eid] = i
            if ev.get("visual") is None and ev.get("audio") is None:
                self.add("event_content", f"{where} ({eid!r}): needs at least one of 'visual' / 'audio'")
            for key in ("visual", "audio", "location"):
                if ev.get(key) is not None and not isinstance(ev[key], str):
                    self.add("type", f"{where} ({eid!r}): '{key}' must be a string")
            for key in ("time", "end"):
                if ev.get(key) is None:
                    continue
                try:
                    t = parse_time(ev[key])
                except (ValueError, TypeError) as exc:
                    self.add("time_format", f"{where} ({eid!r}): '{key}' {ev[key]!r}: {exc}")
                    continue
                if key == "time":
                    if prev is not None and t < prev:
                        self.add("time_order", f"{where} ({eid!r}): time {ev[key]} is before the previous event's")
                    prev = t
        return positions

    def _keys_and_id(self, where: str, obj: dict, keys, noun: str, seen) -> bool:
        """Reports missing keys and a bad or repeated 'id'; True when obj brings a new, valid id."""
        for key in keys:
            if key not in obj:
                self.add("required_key", f"{where}: missing key '{key}'")
        if "id" not in obj:
            return False
        oid = obj["id"]
        if not _nonempty_str(oid):
            self.add("type", f"{where}: 'id' must be a non-empty string")
            return False
        if oid in seen:
            self.add(f"{noun}_id_unique", f"{where}: {noun} id {oid!r} is used twice")
            return False
        return True

    def _intentions(self, intentions: Any, variant: Any, positions: dict[str, int], dpos: int | None) -> None:
        if intentions is None:
            return
        if not isinstance(intentions, list):
            self.add("type", "'intentions' must be a list")
            return
        if variant == "no_formation" and intentions:
            self.add("intentions_count", "a no_formation instance must have no intentions")
        if variant in NEEDS_INTENTIONS and not intentions:
            self.add("intentions_count", f"a {variant} instance needs at least one intention")
        seen: set[str] = set()
        for i, it in enumerate(intentions):
            where = f"intentions[{i}]"
            if not isinstance(it, dict):
                self.add("type", f"{where} must be an object")
                continue
            iid = it.get("id")
            if self._keys_and_id(where, it, INTENTION_KEYS, "intention", seen):
                seen.add(iid)
            where = f"{where} ({iid!r})"
            if "reference" in it and not _nonempty_str(it["reference"]):
                self.add("reference", f"{where}: 'reference' must be a non-empty string")
            fpos = self._ref(it, "formation", where, positions)
            spos = self._ref(it, "state_change", where, positions) if it.get("state_change") is not None else None
            if fpos is not None and dpos is not None:
                # A CAB-style positive instance forms and meets its intention at one moment.
                if fpos > dpos or (fpos == dpos and variant != "positive"):
                    self.add("formation_order", f"{where}: formation {it['formation']!r} must come before "
                             f"the decision event")
            if variant == "state_change":
                if it.get("state_change") is None:
                    self.add("state_change_set", f"{where}: a state_change instance needs 'state_change' set")
                elif spos is not None:
                    if fpos is not None and spos <= fpos:
                        self.add("state_change_order", f"{where}: state_change {it['state_change']!r} must come "
                                 f"after formation {it['formation']!r}")
                    if dpos is not None and spos >= dpos:
                        self.add("state_change_order", f"{where}: state_change {it['state_change']!r} must come "
                                 f"before the decision event")
            elif variant in VARIANTS and it.get("state_change") is not None:
                self.add("state_change_null", f"{where}: 'state_change' must be null in a {variant} instance")
            if "keywords" in it:
                self._keywords(it["keywords"], where, variant == "positive" and fpos is not None and fpos == dpos)

    def _ref(self, it: dict, key: str, where: str, positions: dict[str, int]) -> int | None:
        if key not in it:
            return None
        ref = it[key]
        if not isinstance(ref, str) or ref not in positions:
            self.add(f"{key}_ref", f"{where}: {key} {ref!r} names no event of this instance")
            return None
        return positions[ref]

    def _keywords(self, kw: Any, where: str, formed_at_decision: bool) -> None:
        if not isinstance(kw, list):
            self.add("keywords", f"{where}: 'keywords' must be a list of groups (lists of strings)")
            return
        # An intention formed at the decision moment itself (imported CAB contexts) is judged
        # on the decision alone, so it may carry no keyword groups: any assistance addresses it.
        if not kw and not formed_at_decision:
            self.add("keywords", f"{where}: 'keywords' must hold at least one group")
        for g, group in enumerate(kw):
            if not isinstance(group, list) or not group:
                self.add("keywords", f"{where}: keywords[{g}] must be a non-empty list of strings")
                continue
            if not all(_nonempty_str(s) for s in group):
                self.add("keywords", f"{where}: keywords[{g}] holds an empty or non-string entry")


def check_object(obj: Any, path: str, line: int) -> list[Violation]:
    """All violations of one parsed JSON line."""
    if not isinstance(obj, dict):
        return [Violation(path, line, None, "json", f"expected a JSON object, got {type(obj).__name__}")]
    return _Checker(path, line, obj).run()


def validate_file(path: str | Path) -> tuple[list[Instance], list[Violation]]:
    """Read and check a CPMBench file.

    Returns the instances without any violation (in file order) and every violation found;
    malformed lines and invalid instances are reported, the other lines are still checked.
    """
    path = str(path)
    instances: list[Instance] = []
    violations: list[Violation] = []
    first_line: dict[str, int] = {}
    for no, obj in iter_jsonl(path):
        if isinstance(obj, LineError):
            violations.append(Violation(path, no, None, "json", obj.message))
            continue
        found = check_object(obj, path, no)
        ident = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(ident, str):
            if ident in first_line:
                found.append(Violation(path, no, ident, "instance_id_unique",
                                       f"instance id also used on line {first_line[ident]}"))
            else:
                first_line[ident] = no
        if not found:
            try:
                instances.append(Instance.model_validate(obj))
            except ValidationError as exc:  # a rule the raw checks missed; still named
                found.append(Violation(path, no, ident, "schema", describe_validation_error(exc)))
        violations.extend(found)
    return instances, violations
