"""memory.Memory: one store folder serving many users, the way a chat agent calls a memory layer
(add, search, get_all, delete, intentions). The per-user memory it drives is memory.api's.

Each call opens the user's memory and closes it again. Writes (add, delete) hold the store's
writer lock (memory/lock.py) for that call only; reads (search, get_all, intentions) open the
store read-only and take no lock, so they work while another process writes (the service,
`promem remember`). Every user id is checked by core.userid, and every query names its user.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Union

from core.config import Config, load_config, resolve_path
from core.formats import Event
from core.limits import oversized
from core.timeutil import format_time
from core.userid import require_user_id
from memory.api import open_memory
from memory.chat import Addable, event_id, to_events
from memory.intentions import IntentionRecord
from memory.store import Store


class EventConflict(ValueError):
    """An event id already remembered with other content; nothing of that add was stored."""


@dataclass(frozen=True)
class MemoryItem:
    id: str  # the event's id (what delete takes)
    text: str  # a chat turn's words ("[user] ..."); any other event as one line of text
    time: str  # when it happened, ISO-8601 with offset
    score: Optional[float] = None  # search: the match (a time cue open now: 1.0); get_all: None
    kind: str = "stored"  # search: how it was found, "content" | "cue" | "time" | "link"; get_all: "stored"
    fact: str = ""  # search: the fact or cue text that matched
    metadata: Optional[dict] = None  # what add was given as metadata


def item_text(event: Event) -> str:
    """A remembered chat turn or text is its words; an event with a place or a caption is its line of text."""
    if event.audio and not event.visual and not event.location:
        return event.audio
    return event.text()


def _item(event: Event, **found) -> MemoryItem:
    meta = (event.model_extra or {}).get("metadata")
    return MemoryItem(id=event.id, text=item_text(event), time=event.time,
                      metadata=meta if isinstance(meta, dict) else None, **found)


def _config(config: Union[Config, str, Path, None]) -> Config:
    if config is None or isinstance(config, (str, Path)):
        return load_config(config)
    if isinstance(config, Config):
        return config
    raise TypeError(f"config must be a path to a profile or a loaded Config; got {type(config).__name__}")


_write_locks: dict[str, threading.Lock] = {}
_write_locks_mutex = threading.Lock()


def _write_lock(path: Path) -> threading.Lock:
    """One lock per store folder in this process: the store's file lock is shared within a process,
    so two threads (or two Memory objects) writing one user's index files are kept apart here."""
    key = os.path.realpath(path)
    with _write_locks_mutex:
        return _write_locks.setdefault(key, threading.Lock())


def list_intentions(store: Store, user: str) -> list[IntentionRecord]:
    """A user's intention records (memory/intentions.py): the one place Memory.intentions reads them from."""
    return store.intention_records(user)


class Memory:
    def __init__(self, store: Union[str, Path, None] = None, config: Union[Config, str, Path, None] = None):
        """store: the store folder, relative to the working directory (default: memory.store of the
        config, relative to the repository root as in every config); config: a profile's path or a
        loaded Config (default configs/cpu.yaml)."""
        self.cfg = _config(config)
        self.path = Path(store) if store is not None else resolve_path(self.cfg.memory.store)
        self._writing = _write_lock(self.path)

    def __repr__(self) -> str:
        return f"Memory(store={str(self.path)!r})"

    # -- writing --------------------------------------------------------------------------
    def add(self, messages_or_text: Addable, user_id: str, metadata: Optional[dict] = None,
            time: Union[str, datetime, None] = None) -> list[str]:
        """Remember a text, a chat message list ([{"role", "content"}], one event per turn) or an event
        object; returns the ids of the events stored (ids already remembered with the same content are
        returned too, and stored once). time: when it happened (default now).

        Raises ValueError naming the message or key for bad input, EventConflict when an id is already
        remembered with other content, StoreError when another process is writing the store; in each
        case nothing of this call is stored."""
        user = require_user_id(user_id)
        events = to_events(messages_or_text, user, metadata, time)
        for e in events:
            if why := oversized(e, self.cfg.limits):
                raise ValueError(f"event {e.id[:80]!r}: {why}")
        if not events:
            return []
        with self._writing, open_memory(self.cfg, self.path, user) as mem:
            clash = sorted({events[n].id for n in mem.conflicts(events)})
            if clash:
                raise EventConflict(f"event id(s) {', '.join(map(repr, clash))} of user {user!r} are already "
                                    f"remembered with other content; an id names one event, so nothing of this "
                                    f"add was stored (add the changed event under a new id)")
            mem.add_many(events)
        return list(dict.fromkeys(e.id for e in events))

    def delete(self, memory_id: str, user_id: str) -> bool:
        """Forget one event of this user with its facts, cues, links and vectors; False if there is none."""
        user = require_user_id(user_id)
        with self._writing, open_memory(self.cfg, self.path, user) as mem:
            if not mem.store.delete_event(user, memory_id):
                return False
            # FAISS ids cannot all be removed in place (HNSW): the store holds every vector, so rebuild.
            mem.content.rebuild()
            mem.cues.rebuild()
        return True

    # -- reading --------------------------------------------------------------------------
    def search(self, query: str, user_id: str, limit: int = 5) -> list[MemoryItem]:
        """The user's memories for `query`, best first, by the memory's own retrieval (content, cues,
        time cues, links) at a moment just after the latest memory (or now, if later). Raises
        StoreError when the store is missing or damaged, MissingArtifact when a model is."""
        user = require_user_id(user_id)
        if not isinstance(query, str):
            raise ValueError(f"query must be a string; got {type(query).__name__}")
        if limit <= 0 or not query.strip():
            return []
        with open_memory(self.cfg, self.path, user, readonly=True) as mem:
            latest = mem.store.latest_ts(user)
            if latest is None:
                return []
            now = max(datetime.now(timezone.utc), datetime.fromtimestamp(latest + 1, timezone.utc))
            fields = {"time": format_time(now), "audio": " ".join(query.split())}
            current = Event(id="query-" + event_id(fields), user_id=user, **fields)
            got = mem.retrieve(current, limit)
        items = [_item(r.event, score=r.score, kind=r.path, fact=r.fact) for r in got]
        return sorted(items, key=lambda i: (-i.score, i.time))

    def get_all(self, user_id: str) -> list[MemoryItem]:
        """Every memory of the user, oldest first."""
        user = require_user_id(user_id)
        store = Store(self.path, readonly=True)
        try:
            ids = store.all_event_ids(user)
            out = []
            for s in range(0, len(ids), 500):
                found = store.events(user, ids[s:s + 500])
                out += [_item(found[i].event) for i in ids[s:s + 500] if i in found]
            return out
        finally:
            store.close()

    def intentions(self, user_id: str) -> list[IntentionRecord]:
        """The delayed intentions memory has found for the user, with their triggers and lifecycle."""
        user = require_user_id(user_id)
        store = Store(self.path, readonly=True)
        try:
            return list_intentions(store, user)
        finally:
            store.close()
