"""One session per user: that user's memory, the online decision loop over it, and its files.

Per user, under STORE/serve/<user folder>/: decisions.jsonl (every decision made, appended as
made: a retried event is answered from it, not decided twice), guard.json (the loop's
over-proactivity state) and profile.json (the persona). The memory itself lives in the shared
memory store STORE, kept apart per user by memory.api.
"""
from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import Optional, Sequence

from core.formats import Decision, Event, Profile
from core.jsonio import LineError, atomic_write_json, iter_jsonl
from core.userid import check_user_id, require_user_id, user_dir  # noqa: F401  (check_user_id: used by the app)
from memory.api import open_memory
from memory.brief import Brief, brief_from_store
from memory.intentions import IntentionRecord
from memory.store import Store
from reasoner.guard import Guard
from reasoner.loop import DecisionLoop, _repair_tail

log = logging.getLogger(__name__)


class EventConflict(ValueError):
    """An event id already received with other content (the service answers 409; nothing is ingested)."""


class UserSession:
    def __init__(self, cfg, store: Path, user_id: str, reasoner):
        self.user = require_user_id(user_id)
        self.dir = user_dir(store / "serve", user_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.dir / "decisions.jsonl"
        self.profile_path = self.dir / "profile.json"
        self.memory = open_memory(cfg, store, user_id)
        guard = Guard(cfg.reasoner.cooldown_hours, cfg.reasoner.intention_ttl_hours, self.dir / "guard.json")
        self.loop = DecisionLoop(cfg, self.memory, reasoner, persona=self._load_persona(), guard=guard)
        self.cfg = cfg
        _repair_tail(self.log_path)
        self.decided: dict[str, dict] = {}
        for no, obj in iter_jsonl(self.log_path) if self.log_path.is_file() else ():
            if isinstance(obj, LineError):
                log.warning("%s; that event will be decided again if sent again", obj)
            elif isinstance(obj, dict) and isinstance(obj.get("event_id"), str):
                self.decided[obj["event_id"]] = obj
        if (row := guard.recover(self.log_path, set(self.decided))) is not None:
            self.decided[row["event_id"]] = row

    def _load_persona(self) -> str:
        if not self.profile_path.is_file():
            return ""
        try:
            return Profile.model_validate(json.loads(self.profile_path.read_text(encoding="utf-8"))).persona
        except ValueError as exc:
            log.warning("%s unreadable (%s); serving user %r without a persona", self.profile_path, exc, self.user)
            return ""

    def set_profile(self, profile: Profile) -> None:
        atomic_write_json(self.profile_path, profile.dump())
        self.loop.persona = profile.persona

    def ingest(self, events: Sequence[Event]) -> dict[str, dict]:
        """Decide at each event in time order from memory of the past, then remember it (the online
        loop's order). Returns {event id: decision}; an event decided before gets its old decision.
        Raises EventConflict, before deciding anything, when an id was received with other content."""
        clash = sorted({events[n].id for n in self.memory.conflicts(events)})
        if clash:
            raise EventConflict(f"event id(s) {', '.join(map(repr, clash))} of user {self.user!r} were already "
                                f"received with other content; an id names one event, so nothing of this request "
                                f"was ingested (send a changed event under a new id)")
        out: dict[str, dict] = {}
        for event in sorted(events, key=lambda e: (e.dt, e.id)):
            if event.id in out:
                continue
            if event.id in self.decided:
                # idempotent; repairs a crash between the decision and the intention records or the add
                self.loop.intentions.after_decision(event, self.decided[event.id])
                self.memory.add(event)
                out[event.id] = self.decided[event.id]
                continue
            decision: Decision = self.loop.step(event)
            row = decision.dump()
            self.loop.guard.commit(row, self.log_path)  # the decision and its guard update, as one step
            # Known as decided before it is remembered: if remembering fails, a retry is answered
            # from the log (and remembering retried), never decided a second time.
            self.decided[event.id] = row
            self.loop.intentions.after_decision(event, row)  # raised / dismissed / expired by this decision
            self.memory.add(event)  # may resolve one, by a state-change link
            out[event.id] = row
        return out

    def intentions(self, status: Optional[str] = None) -> list[IntentionRecord]:
        return self.loop.intentions.records(status)

    def dismiss(self, intention_id: str) -> Optional[IntentionRecord]:
        """The user's "no thanks" to one intention; None when this user has no such intention."""
        return self.loop.intentions.dismiss(intention_id)

    def brief(self, at: datetime, location: Optional[str], budget: Optional[int]) -> Brief:
        return brief_from_store(self.memory.store, self.user, self.cfg, at, location, budget)

    def recall(self, event_id: str, k: Optional[int] = None):
        """What memory hands the reasoner at a remembered event; None if the event is not this user's."""
        found = self.memory.store.events(self.user, [event_id])
        if event_id not in found:
            return None
        return self.memory.retrieve(found[event_id].event, k)

    def close(self) -> None:
        self.memory.close()


class Sessions:
    """Sessions opened on first use; at most max_open of them stay open, the least recently used
    is closed (everything it holds is on disk, so reopening it loses nothing).

    Callers use a session on the same thread that gets it (the app's single worker), so a
    session is never closed while in use."""

    def __init__(self, cfg, store: Path, reasoner, max_open: int = 64):
        self.cfg, self.store, self.reasoner = cfg, Path(store), reasoner
        self.max_open = max(1, max_open)
        # The service is the store's one writer for as long as it runs: a second service (or a
        # `promem remember`) on this store is refused with a StoreError naming this process.
        self._writer = Store(self.store)
        self._open: OrderedDict[str, UserSession] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, user_id: str) -> UserSession:
        with self._lock:
            if user_id in self._open:
                self._open.move_to_end(user_id)
                return self._open[user_id]
            session = UserSession(self.cfg, self.store, user_id, self.reasoner)
            self._open[user_id] = session
            while len(self._open) > self.max_open:
                _, old = self._open.popitem(last=False)
                old.close()
            return session

    def __len__(self) -> int:
        return len(self._open)

    def close(self) -> None:
        with self._lock:
            for s in self._open.values():
                try:
                    s.close()
                except Exception as exc:  # one user's failing close must not keep the others open
                    log.warning("closing the memory of user %r failed: %s", s.user, exc)
            self._open.clear()
            self._writer.close()
