"""The store's reads return named rows (fields by name), each for the asking user only."""
import numpy as np

from core.formats import Event
from memory.store import (Built, EventError, IntentionRow, LinkRow, NewCue, NewLink, Store, StoredEvent, TextRow,
                          VectorRows)

DIM = 4


def _built(eid: str, hour: int, rng, **kw) -> Built:
    e = Event(id=eid, time=f"2026-03-02T{hour:02d}:00:00+00:00", visual=f"event {eid}")
    v = rng.standard_normal((3, DIM)).astype(np.float32)
    return Built(event=e, ts=e.dt.timestamp(), vec=v[0], facts=[(f"fact of {eid}", v[1])],
                 cues=[NewCue("event", f"cue of {eid}", v[2])], **kw)


def test_reads_return_named_rows():
    rng = np.random.default_rng(0)
    store = Store(None)
    try:
        first = _built("e1", 8, rng, intentions=[("buy oat milk", 0.8)])
        ts1 = first.ts
        first.cues.append(NewCue("time", "this evening", None, ts1 + 3600, ts1 + 6 * 3600))
        second = _built("e2", 9, rng, links=[NewLink("e1", "state_change", 0.9)], error="construction failed")
        store.write("u1", [first])
        store.write("u1", [second])
        store.write("u2", [_built("e1", 8, rng)])

        vr = store.vectors_after("u1", "facts", 0, DIM)
        assert isinstance(vr, VectorRows) and vr.ids.dtype == np.int64 and vr.vecs.shape == (2, DIM)
        rows = store.rows("u1", "facts", vr.ids)
        assert all(isinstance(r, TextRow) for r in rows.values())
        assert sorted((r.event_id, r.text) for r in rows.values()) == [("e1", "fact of e1"), ("e2", "fact of e2")]
        assert rows[int(vr.ids[0])].ts == ts1

        (tc,) = store.time_cues_at("u1", ts1 + 2 * 3600, 24 * 3600)
        assert tc == TextRow("e1", "this evening", ts1)
        assert store.time_cues_at("u1", ts1, 24 * 3600) == []  # before the window opens

        found = store.events("u1", ["e1", "e2", "nope"])
        assert set(found) == {"e1", "e2"} and isinstance(found["e1"], StoredEvent)
        assert found["e1"].event.visual == "event e1" and found["e1"].ts == ts1

        assert store.links_touching("u1", ["e1"]) == [LinkRow("e1", "e2", "state_change", 0.9)]
        assert store.links_touching("u2", ["e1"]) == []  # another user's links stay theirs
        (it,) = store.intentions("u1")
        assert isinstance(it, IntentionRow) and (it.event_id, it.status, it.resolved_by) == ("e1", "resolved", "e2")
        assert store.errors("u1") == [EventError("e2", "construction failed")] and store.errors("u2") == []
    finally:
        store.close()
