"""Over-proactivity guard for the online loop.

An intention is keyed by the event it formed at (a decision's evidence). Once raised it is
parked: it is not raised again within cfg.reasoner.cooldown_hours, and after that only if
something new about it was recorded since (a "development" link after the raise). A state
change resolves it for good, and an intention older than intention_ttl_hours expires. The caller
may also name evidence whose intention record (memory/intentions.py) is closed - dismissed by the
user, expired or resolved - and that evidence is silenced whatever this state says. An assist
with no recalled event as evidence is keyed by its message instead, under the same cooldown. The
state is a small JSON file in the store, so a rerun keeps it.

A decision and the guard update it made are one step (`commit`): the guard file is written
first and carries the decision row (a write-ahead record), then the row is appended to the
decisions log. A crash between the two is completed on the next open (`recover`), so a rerun
never sees an intention "raised" by a decision that was not recorded.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from core.formats import Decision, Event
from core.jsonio import append_jsonl, atomic_write_json
from core.recall import Recalled
from core.timeutil import parse_time

log = logging.getLogger(__name__)
MESSAGE_KEY = "message:"  # state keys of assists without evidence (the others are event ids)
FILE_FORMAT = 2  # {"format", "state", "pending"}; format 1 was the bare state mapping


@dataclass
class Tracked:
    formed_at: str
    raised_at: Optional[str] = None
    times_raised: int = 0
    resolved_by: Optional[str] = None
    developments: list[str] | None = None  # times of later developments seen


@dataclass
class Pending:
    """The decision last committed, kept in the guard file until the decisions log surely holds it."""

    log: str  # the decisions file (resolved path) it was appended to
    row: dict  # the decision (docs/formats.md section 4)


class Guard:
    def __init__(self, cooldown_hours: float, ttl_hours: float, path: str | Path | None = None):
        self.cooldown_s = cooldown_hours * 3600
        self.ttl_s = ttl_hours * 3600
        self.path = Path(path) if path else None
        self.state: dict[str, Tracked] = {}
        self.pending: Optional[Pending] = None
        self.changed = False  # state changed since the last commit
        if self.path and self.path.is_file():
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
                if isinstance(raw, dict) and raw.get("format") == FILE_FORMAT:
                    raw, pending = raw["state"], raw.get("pending")
                    self.pending = Pending(**pending) if pending else None
                self.state = {k: Tracked(**v) for k, v in raw.items()}
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                # A damaged guard file must not stop the loop; it only risks one repeated reminder.
                log.warning("guard state %s unreadable (%s); starting fresh", self.path, exc)

    def observe(self, past: Sequence[Recalled]) -> None:
        """Record state changes and developments of tracked intentions that the memory links show."""
        times = {r.event.id: r.event.time for r in past}
        for r in past:
            t = self.state.get(r.event.id)
            if t is None:
                continue
            for link in r.links:
                if link.kind == "state_change" and not t.resolved_by:
                    t.resolved_by = link.event_id
                    self.changed = True
                elif link.kind == "development" and link.event_id in times:
                    devs = t.developments or []
                    if times[link.event_id] not in devs:
                        t.developments = devs + [times[link.event_id]]
                        self.changed = True

    def blocked(self, event: Event, now: Event, closed: Optional[Mapping[str, str]] = None) -> Optional[str]:
        """Why raising the intention formed at `event` now would be over-proactive, or None.
        closed: event id -> why its intention record is closed (the records outrank this state)."""
        if closed and event.id in closed:
            return closed[event.id]
        age = (now.dt - event.dt).total_seconds()
        if age > self.ttl_s:
            return f"intention from {event.id} expired ({age / 3600:.0f} h old)"
        t = self.state.get(event.id)
        if t is None or t.raised_at is None:
            return None
        if t.resolved_by:
            return f"intention from {event.id} was resolved by {t.resolved_by}"
        since = (now.dt - parse_time(t.raised_at)).total_seconds()
        if since < self.cooldown_s:
            return f"intention from {event.id} was raised {since / 3600:.1f} h ago (cooldown {self.cooldown_s / 3600:g} h)"
        raised = parse_time(t.raised_at)
        if not any(parse_time(d) > raised for d in (t.developments or [])):
            return f"intention from {event.id} already raised; waiting for a state change or expiry"
        return None

    def apply(self, decision: Decision, past: Sequence[Recalled], current: Event,
              closed: Optional[Mapping[str, str]] = None) -> Decision:
        """Pass the decision through, silenced (with a "guard" key) when every evidence is blocked.
        closed: evidence event id -> why its intention record is closed; that evidence is blocked."""
        self.observe(past)
        if not decision.assist:
            return decision
        by_id = {r.event.id: r.event for r in past}
        evidence = [by_id[e] for e in decision.evidence if e in by_id]
        if not evidence:
            return self._apply_unkeyed(decision, current)
        reasons = {e.id: self.blocked(e, current, closed) for e in evidence}
        open_ = [e for e in evidence if reasons[e.id] is None]
        if not open_:
            why = "; ".join(r for r in reasons.values() if r)
            log.info("event %s: guard keeps silent: %s", current.id, why)
            return decision.model_copy(update={"assist": False, "message": None, "guard": why,
                                               "suppressed_message": decision.message})
        for e in open_:
            t = self.state.setdefault(e.id, Tracked(formed_at=e.time))
            t.raised_at = current.time
            t.times_raised += 1
        self.changed = True  # saved with the decision, by commit
        if len(open_) < len(evidence):
            return decision.model_copy(update={"evidence": [e.id for e in open_],
                                               "guard": "; ".join(r for r in reasons.values() if r)})
        return decision

    def _apply_unkeyed(self, decision: Decision, current: Event) -> Decision:
        """An assist resting on no recalled event (the now head's, or a model's without valid evidence)
        is keyed by its message, letters only: the same words are not spoken again within the cooldown."""
        words = " ".join(re.findall(r"[a-z]+", (decision.message or "").lower()))
        key = MESSAGE_KEY + hashlib.sha256(words.encode()).hexdigest()[:16]
        for k in [k for k, t in self.state.items() if k.startswith(MESSAGE_KEY) and t.raised_at
                  and (current.dt - parse_time(t.raised_at)).total_seconds() > max(self.ttl_s, self.cooldown_s)]:
            del self.state[k]  # message keys never resolve: drop them once they can block nothing
        t = self.state.get(key)
        if t is not None and t.raised_at is not None:
            since = (current.dt - parse_time(t.raised_at)).total_seconds()
            if since < self.cooldown_s:
                why = (f"the same message, resting on no recalled event, was spoken {since / 3600:.1f} h ago "
                       f"(cooldown {self.cooldown_s / 3600:g} h)")
                log.info("event %s: guard keeps silent: %s", current.id, why)
                return decision.model_copy(update={"assist": False, "message": None, "guard": why,
                                                   "suppressed_message": decision.message})
        t = self.state.setdefault(key, Tracked(formed_at=current.time))
        t.raised_at = current.time
        t.times_raised += 1
        self.changed = True  # saved with the decision, in commit
        return decision

    def commit(self, row: dict, log_path: str | Path) -> None:
        """Record the decision `row` and this guard's state as one step (see the module doc)."""
        if self.path and self.changed:
            self.pending = Pending(str(Path(log_path).resolve()), row)
            self.save()
        append_jsonl(log_path, row)
        self.changed = False

    def recover(self, log_path: str | Path, decided: set[str]) -> Optional[dict]:
        """Append the decision committed here but missing from `log_path` (a crash came between
        the two writes); returns it, or None when the log is complete."""
        p = self.pending
        if p is None or p.log != str(Path(log_path).resolve()) or p.row.get("event_id") in decided:
            return None
        append_jsonl(log_path, p.row)
        log.warning("%s: recorded the decision at event %r that an interrupted run had made", log_path,
                    p.row.get("event_id"))
        return p.row

    def save(self) -> None:
        if self.path:
            atomic_write_json(self.path, {"format": FILE_FORMAT, "state": {k: asdict(v) for k, v in self.state.items()},
                                          "pending": asdict(self.pending) if self.pending else None})
