"""SQLite store (WAL): the source of truth for events, facts, cues, links and intentions, per user.

Every query names its user, so one user's rows are never returned for another. Vectors are
kept beside their text, so the FAISS indexes can be rebuilt from here without re-embedding.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, NamedTuple, Optional, Sequence

import numpy as np

from core.formats import Event
from memory.intentions import LIVE, Change, IntentionRecord, Transition, Trigger, derive, iso
from memory.lock import StoreError, StoreLock

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, created REAL DEFAULT (unixepoch('subsec')));
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, id TEXT NOT NULL, ts REAL NOT NULL,
    json TEXT NOT NULL, error TEXT, UNIQUE (user_id, id));
CREATE INDEX IF NOT EXISTS events_ts ON events (user_id, ts);
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, event_id TEXT NOT NULL,
    text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS facts_user ON facts (user_id, id);
CREATE TABLE IF NOT EXISTS cues (
    id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, event_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('event', 'time')), text TEXT NOT NULL,
    start_ts REAL, end_ts REAL);
-- vectors live apart from the rows retrieval reads, so those stay small and cached
CREATE TABLE IF NOT EXISTS event_vecs (user_id TEXT NOT NULL, id TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (user_id, id));
CREATE TABLE IF NOT EXISTS fact_vecs (id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS cue_vecs (id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS cues_user ON cues (user_id, kind, id);
CREATE INDEX IF NOT EXISTS cues_event ON cues (user_id, event_id);
CREATE INDEX IF NOT EXISTS cues_time ON cues (user_id, kind, start_ts, end_ts);
CREATE TABLE IF NOT EXISTS links (
    user_id TEXT NOT NULL, src_event TEXT NOT NULL, dst_event TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('state_change', 'development')), score REAL NOT NULL,
    PRIMARY KEY (user_id, src_event, dst_event));
CREATE INDEX IF NOT EXISTS links_dst ON links (user_id, dst_event);
CREATE TABLE IF NOT EXISTS intentions (
    user_id TEXT NOT NULL, event_id TEXT NOT NULL, text TEXT NOT NULL, score REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'open', resolved_by TEXT, PRIMARY KEY (user_id, event_id, text));
-- every lifecycle step of an intention (memory/intentions.py); the key makes a rerun write nothing twice
CREATE TABLE IF NOT EXISTS intention_transitions (
    user_id TEXT NOT NULL, intention_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'raised', 'resolved', 'expired', 'dismissed')),
    event_id TEXT NOT NULL, ts REAL NOT NULL, source TEXT NOT NULL,
    PRIMARY KEY (user_id, intention_id, state, event_id));
CREATE INDEX IF NOT EXISTS transitions_event ON intention_transitions (user_id, state, ts);
-- the next brief, precomputed by reflection (memory/reflect.py); state: the intentions it was computed from
CREATE TABLE IF NOT EXISTS briefs (user_id TEXT PRIMARY KEY, at REAL NOT NULL, budget INTEGER NOT NULL,
    state TEXT NOT NULL, computed REAL NOT NULL, json TEXT NOT NULL);
"""
# Columns of an intention record, added to stores made before records existed (on open, by a writer).
INTENTION_COLUMNS = (("id", "TEXT"), ("gist", "TEXT"), ("trigger", "TEXT"), ("for_whom", "TEXT"),
                     ("formed_ts", "REAL"), ("window_start", "REAL"), ("window_end", "REAL"))

DB_NAME = "memory.sqlite"


def to_blob(v: np.ndarray) -> bytes:
    return np.ascontiguousarray(v, dtype=np.float32).tobytes()


def from_blobs(blobs: list[bytes], dim: int) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)


class TextRow(NamedTuple):
    """A fact or cue as retrieval reads it: the event it came from, its text, the event's time."""

    event_id: str
    text: str
    ts: float  # the event's time, unix seconds


class StoredEvent(NamedTuple):
    event: Event
    ts: float  # unix seconds


class LinkRow(NamedTuple):
    src: str  # the earlier event
    dst: str  # the later event that develops or changes it
    kind: str  # "state_change" | "development"
    score: float


class IntentionRow(NamedTuple):
    event_id: str
    text: str
    score: float
    status: str  # "open" | "raised" | "resolved" | "expired" | "dismissed"
    resolved_by: Optional[str]


class IntentionState(NamedTuple):
    event_id: str  # where it formed
    intention_id: str
    status: str


class IntentionSpan(NamedTuple):
    event_id: str  # where it formed
    formed_ts: float
    ended_ts: Optional[float]  # its first resolved, expired or dismissed transition; None while live


class FoundIntention(NamedTuple):
    event_id: str  # a stored event where an intention formed
    text: str
    score: float


class FoundLink(NamedTuple):
    src_event: str  # an intention's formation event
    dst_event: str  # the later stored event that changed its state
    score: float


class FoundCue(NamedTuple):
    event_id: str  # a stored event
    text: str  # an event cue found after the fact (reflection through a language model)
    vec: np.ndarray  # in the cue space


class Added(NamedTuple):
    intentions: int
    links: int
    cues: int = 0


class CachedBrief(NamedTuple):
    at: float  # the moment it was computed for (unix seconds)
    budget: int
    state: str  # Store.intention_state when computed
    computed: float  # when it was computed (unix seconds)
    json: str  # the Brief


class EventError(NamedTuple):
    """An event stored with its raw facts only, because construction failed on it."""

    event_id: str
    error: str


class VectorRows(NamedTuple):
    ids: np.ndarray  # int64 row ids, ascending
    vecs: np.ndarray  # float32, one row per id


@dataclass
class NewCue:
    kind: str  # "event" | "time"
    text: str
    vec: Optional[np.ndarray] = None  # event cues: vector in the cue space
    start_ts: Optional[float] = None  # time cues: window [start, end)
    end_ts: Optional[float] = None


@dataclass
class NewLink:
    src_event: str  # the earlier event
    kind: str  # "state_change" | "development"
    score: float


@dataclass
class Built:
    """Everything construction derived from one event, written in one transaction."""

    event: Event
    ts: float
    vec: np.ndarray  # the whole event in the content space (link candidates, features)
    facts: list[tuple[str, np.ndarray]] = field(default_factory=list)
    cues: list[NewCue] = field(default_factory=list)
    links: list[NewLink] = field(default_factory=list)
    intentions: list[tuple[str, float]] = field(default_factory=list)
    error: Optional[str] = None  # construction failed; the event keeps its raw facts only

    @property
    def cue_vec(self) -> Optional[np.ndarray]:
        return next((c.vec for c in self.cues if c.kind == "event"), None)


@dataclass
class Inserted:
    fact_ids: list[int]
    fact_vecs: list[np.ndarray]
    cue_ids: list[int]
    cue_vecs: list[np.ndarray]


def _db_problem(db_path: Path, exc: sqlite3.DatabaseError) -> str:
    msg = str(exc)
    if "readonly" in msg or "unable to open" in msg:
        return f"{db_path}: cannot write ({msg}); this user may only read this store (promem recall)"
    return f"{db_path}: not a usable memory store ({msg}); move it aside and remember the events again"


def _open_readonly(db_path: Path) -> sqlite3.Connection:
    """Open without writing anything. A WAL store left closed has no -shm file, and a reader that may
    not create one (another user's folder) opens it as immutable: no writer is running then."""
    if not db_path.is_file():
        raise StoreError(f"no memory store at {db_path.parent} ({DB_NAME} is missing)")
    uri = db_path.resolve().as_uri()
    last: Optional[sqlite3.DatabaseError] = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            db = sqlite3.connect(uri + query, uri=True, timeout=30, check_same_thread=False)
            db.execute("SELECT COUNT(*) FROM events").fetchone()
            return db
        except sqlite3.DatabaseError as exc:
            last = exc
    raise StoreError(f"{db_path}: cannot be read ({last}); check that it is a promem store and readable") from None


class Store:
    def __init__(self, path: str | Path | None, readonly: bool = False):
        """path: a folder (created) holding memory.sqlite, or None for a private in-memory store.

        A writer holds the store's writer lock (memory/lock.py) until close; readonly=True opens
        an existing store without the lock and never writes to it (recall, another user's files).
        """
        self.lock: Optional[StoreLock] = None
        self.readonly = readonly
        if path is None:
            self.path = None
            self.db = sqlite3.connect(":memory:", check_same_thread=False)
            self._setup()
            return
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"store {self.path} is a file; a store is a folder (it holds {DB_NAME})")
        db_path = self.path / DB_NAME
        if readonly:
            self.db = _open_readonly(db_path)
            self.db.execute("PRAGMA cache_size=-65536")
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"store {self.path}: cannot create the folder ({exc.strerror})") from None
        self.lock = StoreLock(self.path)
        try:
            self.db = sqlite3.connect(db_path, timeout=30, check_same_thread=False)
            # WAL + NORMAL: a killed process loses at most the transaction in flight, never a committed one.
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._setup()
        except sqlite3.DatabaseError as exc:
            self.lock.release()
            raise StoreError(_db_problem(db_path, exc)) from None

    def _setup(self) -> None:
        self.db.execute("PRAGMA cache_size=-65536")  # 64 MiB: the text rows of ~1e6 memories stay in cache
        self.db.executescript(SCHEMA)
        self._upgrade_intentions()

    def _upgrade_intentions(self) -> None:
        """Give a store made before intention records their columns and transitions; rows are kept,
        each gets its record fields and an "open" (and, if resolved, a "resolved") transition."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(intentions)")}
        with self.db:
            for name, decl in INTENTION_COLUMNS:
                if name not in have:
                    self.db.execute(f"ALTER TABLE intentions ADD COLUMN {name} {decl}")
            old = self.db.execute("SELECT i.user_id, i.event_id, i.text, i.status, i.resolved_by, e.json, e.ts "
                                  "FROM intentions i JOIN events e ON e.user_id=i.user_id AND e.id=i.event_id "
                                  "WHERE i.id IS NULL").fetchall()
            for user, event_id, text, status, resolved_by, raw, ts in old:
                windows = self.db.execute("SELECT start_ts, end_ts, text FROM cues WHERE user_id=? AND event_id=? "
                                          "AND kind='time'", (user, event_id)).fetchall()
                d = derive(user, Event.model_validate(json.loads(raw)), text, windows)
                self._set_record(user, event_id, text, d, ts)
                self.db.execute("INSERT OR IGNORE INTO intention_transitions VALUES (?,?,?,?,?,?)",
                                (user, d.id, "open", event_id, ts, "event"))
                if status == "resolved" and resolved_by:
                    row = self.db.execute("SELECT ts FROM events WHERE user_id=? AND id=?",
                                          (user, resolved_by)).fetchone()
                    self.db.execute("INSERT OR IGNORE INTO intention_transitions VALUES (?,?,?,?,?,?)",
                                    (user, d.id, "resolved", resolved_by, row[0] if row else ts, "event"))
            self.db.execute("CREATE UNIQUE INDEX IF NOT EXISTS intentions_id ON intentions (user_id, id)")

    def _set_record(self, user: str, event_id: str, text: str, d, formed_ts: float) -> None:
        self.db.execute("UPDATE intentions SET id=?, gist=?, trigger=?, for_whom=?, formed_ts=?, window_start=?, "
                        "window_end=? WHERE user_id=? AND event_id=? AND text=?",
                        (d.id, d.gist, d.trigger.model_dump_json(), d.for_whom, formed_ts, d.window_start,
                         d.window_end, user, event_id, text))

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            if self.lock is not None:
                self.lock.release()

    # -- writes ---------------------------------------------------------------------------
    def stored_json(self, user: str, ids: Iterable[str]) -> dict[str, str]:
        """id -> the stored event's JSON, for the ids of this user that are stored."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            q = f"SELECT id, json FROM events WHERE user_id=? AND id IN ({','.join('?' * len(chunk))})"
            out.update(self.db.execute(q, [user, *chunk]).fetchall())
        return out

    def write(self, user: str, built: list[Built]) -> list[Inserted]:
        """One transaction for the whole batch: after a crash it is either all there or absent."""
        out = []
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO users (id) VALUES (?)", (user,))
            for b in built:
                cur = self.db.execute(
                    "INSERT OR IGNORE INTO events (user_id, id, ts, json, error) VALUES (?,?,?,?,?)",
                    (user, b.event.id, b.ts, json.dumps(b.event.dump(), ensure_ascii=False), b.error))
                if cur.rowcount == 0:  # already stored (a rerun): nothing derived from it twice
                    out.append(Inserted([], [], [], []))
                    continue
                self.db.execute("INSERT INTO event_vecs VALUES (?,?,?)", (user, b.event.id, to_blob(b.vec)))
                ins = Inserted([], [], [], [])
                for text, vec in b.facts:
                    c = self.db.execute("INSERT INTO facts (user_id, event_id, text) VALUES (?,?,?)",
                                        (user, b.event.id, text))
                    self.db.execute("INSERT INTO fact_vecs VALUES (?,?)", (c.lastrowid, to_blob(vec)))
                    ins.fact_ids.append(c.lastrowid)
                    ins.fact_vecs.append(vec)
                for cue in b.cues:
                    c = self.db.execute(
                        "INSERT INTO cues (user_id, event_id, kind, text, start_ts, end_ts) VALUES (?,?,?,?,?,?)",
                        (user, b.event.id, cue.kind, cue.text, cue.start_ts, cue.end_ts))
                    if cue.kind == "event":
                        self.db.execute("INSERT INTO cue_vecs VALUES (?,?)", (c.lastrowid, to_blob(cue.vec)))
                        ins.cue_ids.append(c.lastrowid)
                        ins.cue_vecs.append(cue.vec)
                for ln in b.links:
                    self._link(user, ln, b.event.id, b.ts)
                windows = [(c.start_ts, c.end_ts, c.text) for c in b.cues if c.kind == "time"]
                for text, score in b.intentions:
                    self._intention(user, b.event, b.ts, text, score, windows)
                out.append(ins)
        return out

    def _link(self, user: str, ln: NewLink, dst_event: str, dst_ts: float) -> None:
        """Store a link to `dst_event`; a state change resolves the live intentions formed at its source."""
        self.db.execute("INSERT OR REPLACE INTO links VALUES (?,?,?,?,?)",
                        (user, ln.src_event, dst_event, ln.kind, ln.score))
        if ln.kind == "state_change":
            ids = [r[0] for r in self.db.execute(
                f"SELECT id FROM intentions WHERE user_id=? AND event_id=? AND status IN {LIVE}", (user, ln.src_event))]
            self.db.execute(f"UPDATE intentions SET resolved_by=? WHERE user_id=? AND event_id=? "
                            f"AND status IN {LIVE}", (dst_event, user, ln.src_event))
            self._transition([Change(intention_id=i, state="resolved", event_id=dst_event, ts=dst_ts)
                              for i in ids], user)

    def _intention(self, user: str, event: Event, ts: float, text: str, score: float, windows) -> bool:
        """Store an intention formed at `event` with its record and "open" transition; False if already stored."""
        cur = self.db.execute("INSERT OR IGNORE INTO intentions (user_id, event_id, text, score) "
                              "VALUES (?,?,?,?)", (user, event.id, text, score))
        if not cur.rowcount:
            return False
        d = derive(user, event, text, windows)
        self._set_record(user, event.id, text, d, ts)
        self.db.execute("INSERT OR IGNORE INTO intention_transitions VALUES (?,?,?,?,?,?)",
                        (user, d.id, "open", event.id, ts, "event"))
        return True

    def add_found(self, user: str, intentions: list[FoundIntention], links: list[FoundLink],
                  cues: Sequence[FoundCue] = ()) -> Added:
        """Intentions, state-change links and event cues found after the fact (reflection) for stored
        events, in one transaction; each only once (a rerun adds nothing; a cue is known by its event
        and text). Returns how many of each were new. New cue rows reach an open index by its catch_up."""
        n_int = n_link = n_cue = 0
        with self.db:
            for c in cues:
                known = self.db.execute("SELECT 1 FROM cues WHERE user_id=? AND event_id=? AND kind='event' AND text=?",
                                        (user, c.event_id, c.text)).fetchone()
                stored = self.db.execute("SELECT 1 FROM events WHERE user_id=? AND id=?", (user, c.event_id)).fetchone()
                if known or not stored:
                    continue
                row = self.db.execute("INSERT INTO cues (user_id, event_id, kind, text) VALUES (?,?,?,?)",
                                      (user, c.event_id, "event", c.text))
                self.db.execute("INSERT INTO cue_vecs VALUES (?,?)", (row.lastrowid, to_blob(c.vec)))
                n_cue += 1
            for f in intentions:
                row = self.db.execute("SELECT json, ts FROM events WHERE user_id=? AND id=?",
                                      (user, f.event_id)).fetchone()
                if row is None:
                    continue
                windows = self.db.execute("SELECT start_ts, end_ts, text FROM cues WHERE user_id=? AND event_id=? "
                                          "AND kind='time'", (user, f.event_id)).fetchall()
                event = Event.model_validate(json.loads(row[0]))
                n_int += self._intention(user, event, row[1], f.text, f.score, windows)
            for f in links:
                have = self.db.execute("SELECT kind FROM links WHERE user_id=? AND src_event=? AND dst_event=?",
                                       (user, f.src_event, f.dst_event)).fetchone()
                row = self.db.execute("SELECT ts FROM events WHERE user_id=? AND id=?", (user, f.dst_event)).fetchone()
                if row is None or (have and have[0] == "state_change"):
                    continue
                self._link(user, NewLink(f.src_event, "state_change", f.score), f.dst_event, row[0])
                n_link += 1
        return Added(n_int, n_link, n_cue)

    # -- the precomputed brief (memory/reflect.py) ----------------------------------------------
    def intention_state(self, user: str) -> str:
        """Changes whenever this user's intentions or their transitions do."""
        n, = self.db.execute("SELECT COUNT(*) FROM intentions WHERE user_id=?", (user,)).fetchone()
        t, last = self.db.execute("SELECT COUNT(*), MAX(rowid) FROM intention_transitions WHERE user_id=?",
                                  (user,)).fetchone()
        return f"{n}:{t}:{last}"

    def put_brief(self, user: str, at: float, budget: int, state: str, computed: float, raw: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO briefs VALUES (?,?,?,?,?,?)",
                            (user, at, budget, state, computed, raw))

    def get_brief(self, user: str) -> Optional[CachedBrief]:
        try:
            row = self.db.execute("SELECT at, budget, state, computed, json FROM briefs WHERE user_id=?",
                                  (user,)).fetchone()
        except sqlite3.OperationalError:  # a store made before precomputed briefs, opened read-only
            return None
        return CachedBrief(*row) if row else None

    def latest_event(self, user: str) -> Optional[Event]:
        row = self.db.execute("SELECT json FROM events WHERE user_id=? ORDER BY ts DESC, seq DESC LIMIT 1",
                              (user,)).fetchone()
        return Event.model_validate(json.loads(row[0])) if row else None

    def events_between(self, user: str, lo: float, hi: float) -> list[Event]:
        """This user's stored events with lo <= time < hi, in time order."""
        rows = self.db.execute("SELECT json FROM events WHERE user_id=? AND ts>=? AND ts<? ORDER BY ts, seq",
                               (user, lo, hi)).fetchall()
        return [Event.model_validate(json.loads(r[0])) for r in rows]

    def live_intentions_before(self, user: str, before: float) -> list[IntentionState]:
        """Open or raised intentions formed before `before`."""
        q = (f"SELECT event_id, id, status FROM intentions WHERE user_id=? AND id IS NOT NULL AND status IN {LIVE} "
             f"AND formed_ts<? ORDER BY formed_ts, id")
        return [IntentionState(*r) for r in self.db.execute(q, (user, before))]

    def intention_spans(self, user: str) -> list[IntentionSpan]:
        """Every intention with when it formed and when it stopped being live: enough to tell which
        were open at any past moment."""
        q = ("SELECT i.event_id, i.formed_ts, (SELECT MIN(t.ts) FROM intention_transitions t WHERE t.user_id=i.user_id "
             "AND t.intention_id=i.id AND t.state IN ('resolved', 'expired', 'dismissed')) FROM intentions i "
             "WHERE i.user_id=? AND i.id IS NOT NULL AND i.formed_ts IS NOT NULL ORDER BY i.formed_ts")
        return [IntentionSpan(*r) for r in self.db.execute(q, (user,))]

    def delete_event(self, user: str, event_id: str) -> bool:
        """Forget one event of this user and everything derived from it (facts, cues, their vectors,
        links from or to it, intentions it formed), in one transaction; an intention it had resolved
        is open again. False if the user has no such event. The FAISS indexes still hold the deleted
        vectors until rebuilt (retrieval skips ids missing here meanwhile)."""
        with self.db:
            gone = self.db.execute("DELETE FROM events WHERE user_id=? AND id=?", (user, event_id)).rowcount
            if not gone:
                return False
            for table, vecs in (("facts", "fact_vecs"), ("cues", "cue_vecs")):
                self.db.execute(f"DELETE FROM {vecs} WHERE id IN (SELECT id FROM {table} WHERE user_id=? AND event_id=?)",
                                (user, event_id))
                self.db.execute(f"DELETE FROM {table} WHERE user_id=? AND event_id=?", (user, event_id))
            self.db.execute("DELETE FROM event_vecs WHERE user_id=? AND id=?", (user, event_id))
            self.db.execute("DELETE FROM links WHERE user_id=? AND (src_event=? OR dst_event=?)",
                            (user, event_id, event_id))
            self.db.execute("DELETE FROM intention_transitions WHERE user_id=? AND intention_id IN "
                            "(SELECT id FROM intentions WHERE user_id=? AND event_id=?)", (user, user, event_id))
            self.db.execute("DELETE FROM intentions WHERE user_id=? AND event_id=?", (user, event_id))
            # An intention this event resolved goes back to the state it had before (raised or open).
            self.db.execute("DELETE FROM intention_transitions WHERE user_id=? AND state='resolved' AND event_id=?",
                            (user, event_id))
            self.db.execute("UPDATE intentions SET resolved_by=NULL, status=CASE WHEN EXISTS (SELECT 1 FROM "
                            "intention_transitions t WHERE t.user_id=intentions.user_id AND t.intention_id=intentions.id "
                            "AND t.state='raised') THEN 'raised' ELSE 'open' END WHERE user_id=? AND resolved_by=?",
                            (user, event_id))
        return True

    def _transition(self, changes: list[Change], user: str) -> int:
        """Apply transitions inside the caller's transaction; each only from open or raised."""
        n = 0
        for c in changes:
            cur = self.db.execute(f"UPDATE intentions SET status=? WHERE user_id=? AND id=? AND status IN {LIVE}",
                                  (c.state, user, c.intention_id))
            if cur.rowcount:
                n += self.db.execute("INSERT OR IGNORE INTO intention_transitions VALUES (?,?,?,?,?,?)",
                                     (user, c.intention_id, c.state, c.event_id, c.ts, c.source)).rowcount
        return n

    def transition(self, user: str, changes: list[Change]) -> int:
        """Apply transitions in one transaction (a crash leaves all of them or none); returns how many were new."""
        if not changes:
            return 0
        with self.db:
            return self._transition(changes, user)

    # -- reads ----------------------------------------------------------------------------
    def count(self, user: str, table: str, kind: str | None = None) -> int:
        assert table in ("events", "facts", "cues", "links", "intentions")
        if kind:
            return self.db.execute(f"SELECT COUNT(*) FROM {table} WHERE user_id=? AND kind=?", (user, kind)).fetchone()[0]
        return self.db.execute(f"SELECT COUNT(*) FROM {table} WHERE user_id=?", (user,)).fetchone()[0]

    def max_id(self, user: str, table: str) -> int:
        q = {"facts": "SELECT MAX(id) FROM facts WHERE user_id=?",
             "cues": "SELECT MAX(id) FROM cues WHERE user_id=? AND kind='event'"}[table]
        return self.db.execute(q, (user,)).fetchone()[0] or 0

    def vectors_after(self, user: str, table: str, after: int, dim: int) -> VectorRows:
        """(ids, vectors) of the rows an index has not seen yet."""
        q = {"facts": "SELECT t.id, v.vec FROM facts t CROSS JOIN fact_vecs v ON v.id=t.id "
                      "WHERE t.user_id=? AND t.id>? ORDER BY t.id",
             "cues": "SELECT t.id, v.vec FROM cues t CROSS JOIN cue_vecs v ON v.id=t.id "
                     "WHERE t.user_id=? AND t.kind='event' AND t.id>? ORDER BY t.id"}[table]
        rows = self.db.execute(q, (user, after)).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return VectorRows(ids, from_blobs([r[1] for r in rows], dim))

    def rows(self, user: str, table: str, ids: Iterable[int]) -> dict[int, TextRow]:
        """id -> its row, for facts or cues of this user only."""
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        # Hits are fetched by primary key: left to itself the planner walked the user's whole cue
        # index (13 ms per query at 100,000 memories); CROSS JOIN keeps the hits as the outer loop.
        q = (f"SELECT t.id, t.event_id, t.text, e.ts FROM {table} t CROSS JOIN events e "
             f"ON e.user_id=t.user_id AND e.id=t.event_id "
             f"WHERE t.id IN ({','.join('?' * len(ids))}) AND +t.user_id=?")  # "+": rowid lookups, not a user scan
        return {r[0]: TextRow(r[1], r[2], r[3]) for r in self.db.execute(q, [*ids, user])}

    def time_cues_at(self, user: str, ts: float, max_window_s: float) -> list[TextRow]:
        """Time cues whose window contains ts, narrowest window first.

        Windows are at most max_window_s long, so only starts within that span before ts can match:
        the bound turns a scan of every time cue into an index range.
        """
        q = ("SELECT c.event_id, c.text, e.ts FROM cues c CROSS JOIN events e ON e.user_id=c.user_id AND e.id=c.event_id "
             "WHERE c.user_id=? AND c.kind='time' AND c.start_ts<=? AND c.start_ts>=? AND c.end_ts>? "
             "ORDER BY c.end_ts - c.start_ts, e.ts DESC")
        return [TextRow(*r) for r in self.db.execute(q, (user, ts, ts - max_window_s, ts))]

    def events(self, user: str, ids: Iterable[str]) -> dict[str, StoredEvent]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        q = f"SELECT id, json, ts FROM events WHERE user_id=? AND id IN ({','.join('?' * len(ids))})"
        return {r[0]: StoredEvent(Event.model_validate(json.loads(r[1])), r[2]) for r in self.db.execute(q, [user, *ids])}

    def event_vecs(self, user: str, ids: Iterable[str], dim: int) -> dict[str, np.ndarray]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        q = f"SELECT id, vec FROM event_vecs WHERE user_id=? AND id IN ({','.join('?' * len(ids))})"
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in self.db.execute(q, [user, *ids])}

    def event_cue_vecs(self, user: str, ids: Iterable[str], dim: int) -> dict[str, np.ndarray]:
        """event id -> its event cue's vector (the event in the cue space)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        q = (f"SELECT c.event_id, v.vec FROM cues c CROSS JOIN cue_vecs v ON v.id=c.id "
             f"WHERE c.user_id=? AND c.event_id IN ({','.join('?' * len(ids))}) AND c.kind='event'")
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in self.db.execute(q, [user, *ids])}

    def latest_ts(self, user: str) -> Optional[float]:
        """Time of this user's latest event (unix seconds), or None when there is none."""
        return self.db.execute("SELECT MAX(ts) FROM events WHERE user_id=?", (user,)).fetchone()[0]

    def all_event_ids(self, user: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM events WHERE user_id=? ORDER BY ts, seq", (user,))]

    def links_touching(self, user: str, event_ids: Iterable[str]) -> list[LinkRow]:
        """Links from or to any of these events."""
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        q = (f"SELECT src_event, dst_event, kind, score FROM links WHERE user_id=? "
             f"AND (src_event IN ({marks}) OR dst_event IN ({marks}))")
        return [LinkRow(*r) for r in self.db.execute(q, [user, *ids, *ids])]

    def intentions(self, user: str) -> list[IntentionRow]:
        q = "SELECT event_id, text, score, status, resolved_by FROM intentions WHERE user_id=?"
        return [IntentionRow(*r) for r in self.db.execute(q, (user,))]

    def errors(self, user: str) -> list[EventError]:
        q = "SELECT id, error FROM events WHERE user_id=? AND error IS NOT NULL"
        return [EventError(*r) for r in self.db.execute(q, (user,))]

    # -- intention records (memory/intentions.py) ---------------------------------------------
    def intention_records(self, user: str, status: Optional[str] = None,
                          intention_id: Optional[str] = None) -> list[IntentionRecord]:
        """This user's intentions, oldest first, with their transitions in order."""
        q = ("SELECT id, gist, trigger, for_whom, status, score, formed_ts, event_id FROM intentions "
             "WHERE user_id=? AND id IS NOT NULL")
        args: list = [user]
        if status:
            q, args = q + " AND status=?", args + [status]
        if intention_id:
            q, args = q + " AND id=?", args + [intention_id]
        try:
            rows = self.db.execute(q + " ORDER BY formed_ts, id", args).fetchall()
        except sqlite3.OperationalError as exc:  # a store made before records, opened read-only
            raise StoreError(f"{self.path}: this store predates intention records ({exc}); open it once with "
                             f"a writer (`promem remember` or `promem serve`) to upgrade it") from None
        out = []
        for iid, gist, trig, for_whom, st, score, formed, event_id in rows:
            steps = self.db.execute("SELECT state, ts, event_id, source FROM intention_transitions "
                                    "WHERE user_id=? AND intention_id=? ORDER BY ts, rowid", (user, iid)).fetchall()
            later = [r[0] for r in self.db.execute("SELECT dst_event FROM links WHERE user_id=? AND src_event=?",
                                                   (user, event_id))]
            out.append(IntentionRecord(
                id=iid, user_id=user, gist=gist, evidence=[event_id, *later], formed_at=iso(formed),
                trigger=Trigger.model_validate_json(trig), for_whom=for_whom, status=st, score=score,
                transitions=[Transition(state=a, at=iso(t), event_id=e or None, source=src) for a, t, e, src in steps]))
        return out

    def last_raise(self, user: str, lo: float, hi: float, exclude_event: str = "") -> Optional[str]:
        """The event of the latest raise in [lo, hi], or None."""
        row = self.db.execute("SELECT event_id FROM intention_transitions WHERE user_id=? AND state='raised' "
                              "AND ts>=? AND ts<=? AND event_id!=? ORDER BY ts DESC LIMIT 1",
                              (user, lo, hi, exclude_event)).fetchone()
        return row[0] if row else None

    def raised_by(self, user: str, event_id: str) -> list[str]:
        """Intentions still raised whose raise came at this event."""
        q = ("SELECT i.id FROM intention_transitions t "
             "JOIN intentions i ON i.user_id=t.user_id AND i.id=t.intention_id "
             "WHERE t.user_id=? AND t.state='raised' AND t.event_id=? AND i.status='raised'")
        return [r[0] for r in self.db.execute(q, (user, event_id))]

    def live_intentions_at(self, user: str, event_ids: Iterable[str]) -> list[str]:
        """Open or raised intentions that formed at these events."""
        ids = list(dict.fromkeys(event_ids))
        q = (f"SELECT id FROM intentions WHERE user_id=? AND status IN {LIVE} "
             f"AND event_id IN ({','.join('?' * len(ids))})")
        return [r[0] for r in self.db.execute(q, [user, *ids])] if ids else []

    def intention_states_at(self, user: str, event_ids: Iterable[str]) -> list[IntentionState]:
        """The intentions that formed at these events, with their status."""
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return []
        q = (f"SELECT event_id, id, status FROM intentions WHERE user_id=? AND id IS NOT NULL "
             f"AND event_id IN ({','.join('?' * len(ids))}) ORDER BY id")
        return [IntentionState(*r) for r in self.db.execute(q, [user, *ids])]

    def live_formed_before(self, user: str, cutoff: float) -> list[tuple[str, float]]:
        """(intention id, formation time) of open or raised intentions formed before cutoff."""
        q = f"SELECT id, formed_ts FROM intentions WHERE user_id=? AND status IN {LIVE} AND formed_ts<?"
        return [(r[0], r[1]) for r in self.db.execute(q, (user, cutoff))]
