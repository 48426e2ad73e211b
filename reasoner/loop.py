"""The online decision loop: at each event, in time order, decide from memory of the past, then
remember the event. Decisions are appended to a JSON Lines file as they are made, so an
interrupted run resumes where it stopped (events already decided are skipped). Each decision
also updates the user's intention records (memory/intentions.py) before the event is remembered.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from core.formats import Decision, Event, Profile
from core.jsonio import LineError, iter_jsonl
from memory.trigger import check as trigger_check
from memory.intentions import IntentionBook
from reasoner.guard import Guard

log = logging.getLogger(__name__)


def decided_rows(path: Path) -> dict[str, dict]:
    """Event id -> decision row already in an output file; a partial last line (a crash) is ignored."""
    if not path.is_file():
        return {}
    done: dict[str, dict] = {}
    for no, obj in iter_jsonl(path):
        if isinstance(obj, LineError):
            log.warning("%s; that decision will be made again", obj)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event_id"), str):
            done[obj["event_id"]] = obj
    return done


def _repair_tail(path: Path) -> None:
    """Drop a half-written last line left by a crash, so the next append starts on a fresh line."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        path.write_bytes(data[:cut])
        log.warning("%s: dropped an incomplete last line from an interrupted run", path)


class DecisionLoop:
    def __init__(self, cfg, memory, reasoner, persona: str = "", guard: Optional[Guard] = None):
        self.cfg = cfg
        self.memory = memory
        self.reasoner = reasoner
        self.persona = persona
        self.guard = guard or Guard(cfg.reasoner.cooldown_hours, cfg.reasoner.intention_ttl_hours)
        self.intentions = IntentionBook.for_config(memory.store, memory.user, cfg)

    def step(self, event: Event) -> Decision:
        """Decide at `event` from memory of the past (the event itself is remembered afterwards)."""
        t0 = time.perf_counter()
        vectors = None
        if self.cfg.memory.trigger.enabled:
            verdict, vectors = trigger_check(self.memory, event)
            if not verdict.needed:  # nothing pending resembles this moment: no retrieval, no reasoner
                ms = round((time.perf_counter() - t0) * 1000, 2)
                return Decision(event_id=event.id, assist=False, trigger=verdict.reason, timing_ms={"trigger": ms})
        past = self.memory.retrieve(event, vectors=vectors)
        t_retrieve = (time.perf_counter() - t0) * 1000
        decision = self.reasoner.decide(self.persona, past, event)
        # Evidence whose intention the user dismissed, or that expired or resolved, stays silent.
        closed = self.intentions.closed_at(decision.evidence) if decision.assist else {}
        decision = self.guard.apply(decision, past, event, closed)
        decision.timing_ms = {"retrieve": round(t_retrieve, 2),
                              **{k: round(v, 2) for k, v in decision.timing_ms.items()}}
        return decision

    def run(self, events: Iterable[Event], out: str | Path,
            on_decision: Optional[Callable[[Event, Decision], None]] = None, progress: bool = True) -> dict:
        """Walk events in time order; returns counts {decided, skipped, assist, errors, conflicts}."""
        from tqdm import tqdm

        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        _repair_tail(out)
        done = decided_rows(out)
        if (row := self.guard.recover(out, set(done))) is not None:
            done[row["event_id"]] = row
        events = list(events)
        # An id names one event: one sent again with other content is skipped, never decided twice.
        clash = set(self.memory.conflicts(events))
        for n in sorted(clash):
            log.error("event id %r is already remembered or listed with other content; skipped "
                      "(send a changed event under a new id)", events[n].id)
        ordered = sorted((e for n, e in enumerate(events) if n not in clash), key=lambda e: (e.dt, e.id))
        counts = {"decided": 0, "skipped": 0, "assist": 0, "errors": 0, "conflicts": len(clash)}
        for event in tqdm(ordered, desc="decide", unit="event", disable=not progress):
            if event.id in done:
                # Decided before an interruption; make sure the intention records and memory hold it
                # (both are idempotent).
                self.intentions.after_decision(event, done[event.id])
                self.memory.add(event)
                counts["skipped"] += 1
                continue
            decision = self.step(event)
            row = decision.dump()
            self.guard.commit(row, out)
            done[event.id] = row
            self.intentions.after_decision(event, row)  # raised / dismissed / expired by this decision
            self.memory.add(event)  # may resolve one, by a state-change link
            counts["decided"] += 1
            counts["assist"] += int(decision.assist)
            counts["errors"] += int(decision.error is not None)
            if on_decision:
                on_decision(event, decision)
        return counts


def load_profile(path: str | Path | None) -> Profile:
    if not path:
        return Profile()
    import json

    p = Path(path)
    try:
        return Profile.model_validate(json.loads(p.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{p}: cannot read profile: {exc}") from None
