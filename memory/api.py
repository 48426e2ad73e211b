"""Public API of memory: open_memory(cfg, store, user_id) -> Memory (add, add_many, retrieve, close)."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from core.formats import Event
from core.recall import Recalled
from core.userid import user_dir, user_dir_name  # noqa: F401  (user_dir_name: public here too)
from memory.construct import build_constructor
from memory.construct.base import Candidate
from memory.index import VectorIndex
from memory.lock import StoreError
from memory.store import Built, Store

log = logging.getLogger(__name__)
_CONSTRUCTORS: dict[str, object] = {}  # models stay loaded process-wide: the benchmark opens one memory per timeline


def _constructor(cfg):
    key = cfg.memory.embedder.model_dump_json() + cfg.memory.construction.model_dump_json()
    if key not in _CONSTRUCTORS:
        _CONSTRUCTORS[key] = build_constructor(cfg)
    return _CONSTRUCTORS[key]


def event_content(event: Event) -> dict:
    """What makes two events with one id the same event: every key but the user (the store's key),
    with absent and null keys alike, compared as their JSON."""
    return {k: v for k, v in json.loads(json.dumps(event.dump())).items() if v is not None and k != "user_id"}


def stored_content(raw: str) -> dict:
    """event_content of an event as the store keeps it (its JSON)."""
    return event_content(Event.model_validate(json.loads(raw)))


class Memory:
    def __init__(self, cfg, store: Optional[Path], user_id: str, constructor=None, readonly: bool = False):
        if not user_id:
            raise ValueError("memory needs a user id")
        self.cfg, self.user = cfg, user_id
        self.constructor = constructor if constructor is not None else _constructor(cfg)
        self.store = Store(store, readonly=readonly)
        self.readonly = readonly
        idx_dir = None if store is None else user_dir(Path(store) / "index", user_id)
        dim_c = self.constructor.content.dim
        dim_q = self.constructor.cue.dim
        try:
            self.content = VectorIndex(self.store, user_id, "facts", dim_c, cfg.memory.index,
                                       None if idx_dir is None else idx_dir / "content.faiss", readonly)
            self.cues = VectorIndex(self.store, user_id, "cues", dim_q, cfg.memory.index,
                                    None if idx_dir is None else idx_dir / "cue.faiss", readonly)
        except BaseException:
            self.store.close()  # releases the writer lock
            raise

    # -- writing --------------------------------------------------------------------------
    def add(self, event: Event) -> None:
        self.add_many([event])

    def conflicts(self, events: Sequence[Event]) -> list[int]:
        """Positions in `events` of events whose id is already remembered with other content, or
        repeats an earlier event of `events` with other content. An id names one event for good:
        such an event is never stored (sending the same event again is not a conflict)."""
        raw = self.store.stored_json(self.user, (e.id for e in events))
        stored = {i: stored_content(r) for i, r in raw.items()}
        out = []
        for n, e in enumerate(events):
            content = event_content(e)
            if stored.setdefault(e.id, content) != content:
                out.append(n)
        return out

    def add_many(self, events: Iterable[Event], progress=None) -> int:
        """Add events not yet stored (by id); returns how many were new. Committed batch by batch."""
        if self.readonly:
            raise StoreError(f"store {self.store.path} was opened read-only; nothing can be remembered through it")
        fresh: dict[str, Event] = {}
        for e in events:
            if e.user_id and e.user_id != self.user:
                raise ValueError(f"event {e.id!r} belongs to user {e.user_id!r}, not {self.user!r}")
            fresh.setdefault(e.id, e)
        known = self.store.stored_json(self.user, fresh)
        for i, raw in known.items():
            if stored_content(raw) != event_content(fresh[i]):
                log.warning("event %r of user %r is already remembered with other content; kept as it was",
                            i, self.user)
        todo = sorted((e for i, e in fresh.items() if i not in known), key=lambda e: e.dt.timestamp())
        bs = max(1, self.cfg.memory.construction.batch_size)
        for s in range(0, len(todo), bs):
            self._add_batch(todo[s:s + bs])
            if progress is not None:
                progress(len(todo[s:s + bs]))
        self.save()
        return len(todo)

    def _add_batch(self, events: list[Event]) -> None:
        built = self.constructor.extract(events)
        pool: list[Built] = []
        for b in built:
            b.links = self.constructor.link(b, self._candidates(b, pool))
            pool.append(b)
        self.add_built(built)

    def add_built(self, built: list[Built]) -> None:
        """Commit constructed events, then index them (a crash in between is repaired by catch_up on open)."""
        inserted = self.store.write(self.user, built)
        self.content.add([i for ins in inserted for i in ins.fact_ids], [v for ins in inserted for v in ins.fact_vecs])
        self.cues.add([i for ins in inserted for i in ins.cue_ids], [v for ins in inserted for v in ins.cue_vecs])

    def _candidates(self, b: Built, pool: list[Built]) -> list[Candidate]:
        """Top-m earlier events by content similarity: stored ones via the index, plus this batch's."""
        m = self.cfg.memory.construction.link_candidates
        best: dict[str, tuple[float, str]] = {}
        hits = self.content.search(b.vec, m * 4)
        rows = self.store.rows(self.user, "facts", [i for i, _ in hits])
        for fid, score in hits:
            if fid in rows:
                row = rows[fid]
                ev = row.event_id
                if row.ts < b.ts and ev != b.event.id and (ev not in best or best[ev][0] < score):
                    best[ev] = (score, row.text)
        local = {p.event.id: p for p in pool if p.ts < b.ts}
        for p in local.values():
            for text, vec in p.facts:
                s = float(np.dot(vec, b.vec))
                if p.event.id not in best or best[p.event.id][0] < s:
                    best[p.event.id] = (s, text)
        top = sorted(best.items(), key=lambda kv: -kv[1][0])[:m]
        stored_ids = [ev for ev, _ in top if ev not in local]
        stored = self.store.events(self.user, stored_ids)
        vecs = self.store.event_vecs(self.user, stored_ids, self.content.dim)
        cue_vecs = self.store.event_cue_vecs(self.user, stored_ids, self.cues.dim)
        out = []
        for ev, (score, text) in top:
            if ev in local:
                out.append(Candidate(local[ev].event, local[ev].vec, text, score, local[ev].cue_vec))
            elif ev in stored:
                out.append(Candidate(stored[ev].event, vecs[ev], text, score, cue_vecs.get(ev)))
        return out

    def save(self) -> None:
        self.content.save()
        self.cues.save()

    # -- reading --------------------------------------------------------------------------
    def retrieve(self, current: Event, k: int | None = None, vectors=None) -> list[Recalled]:
        """vectors: optional (content, cue) query vectors already computed for `current`."""
        from memory.retrieve import retrieve

        return retrieve(self, current, k, vectors)

    def check(self) -> dict:
        """Index/store consistency, for tests and `promem remember` reports."""
        return {
            "events": self.store.count(self.user, "events"),
            "facts": self.store.count(self.user, "facts"),
            "content_index": self.content.ntotal,
            "event_cues": self.store.count(self.user, "cues", "event"),
            "cue_index": self.cues.ntotal,
            "links": self.store.count(self.user, "links"),
            "intentions": self.store.count(self.user, "intentions"),
        }

    def close(self) -> None:
        try:
            self.save()
        finally:
            self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_memory(cfg, store: str | Path | None, user_id: str, constructor=None, readonly: bool = False) -> Memory:
    """A user's memory in store folder `store` (None: a private in-memory store, gone on close).

    constructor: an already built constructor (default: the configured one, shared process-wide).
    readonly: read an existing store without the writer lock and without writing any file
    (recall, or a store of another user); a writer holds the store's lock until close.
    Raises StoreError (naming the file) for a busy, damaged or unwritable store.
    """
    return Memory(cfg, None if store is None else Path(store), user_id, constructor, readonly)
