"""Intention records on a real SQLite store: every lifecycle transition, idempotence on rerun, a
kill -9 between two transitions, the upgrade of a store made before records, the brief's ranking
and budget, the CLI's table and JSON, and one user's intentions never shown for another."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cli.main import main
from core.config import load_config
from core.formats import Event
from core.timeutil import parse_time
from core.tokens import count_tokens
from memory.brief import build_brief, render
from memory.construct.base import time_cues
from memory.intentions import IntentionBook, declines, expire_hours
from memory.lock import StoreError
from memory.store import Built, NewCue, NewLink, Store
from tests.support.data import REPO

DIM = 4
FORM = "[user] We ran out of oat milk. I need to buy some at the store on Friday evening."


def _built(eid: str, time: str, audio=None, visual="The user is at home.", location=None, seed=0, **kw) -> Built:
    e = Event(id=eid, time=time, audio=audio, visual=visual, location=location)
    v = np.random.default_rng(seed).standard_normal((3, DIM)).astype(np.float32)
    return Built(event=e, ts=e.dt.timestamp(), vec=v[0], facts=[(f"fact of {eid}", v[1])],
                 cues=[NewCue("event", f"cue of {eid}", v[2])] + time_cues(e), **kw)


def _formed(eid="e1", time="2026-03-02T08:00:00+01:00", audio=FORM, **kw) -> Built:
    b = _built(eid, time, audio=audio, location="kitchen", **kw)
    b.intentions = [(b.event.text(), 0.9)]  # as the encoder constructor stores it: the event's own text
    return b


def _at(eid, time, audio=None, **kw) -> Event:
    return Event(id=eid, time=time, visual="Walking down the street.", audio=audio, **kw)


def _assist(event: Event, evidence) -> dict:
    return {"event_id": event.id, "assist": True, "message": "Oat milk?", "evidence": list(evidence)}


def _states(rec):
    return [(t.state, t.event_id) for t in rec.transitions]


def test_record_fields_from_the_formation_event():
    store = Store(None)
    try:
        store.write("u1", [_formed(audio="[user] I should call Anna's dentist tomorrow at 9 about the filling.")])
        (rec,) = store.intention_records("u1")
        assert rec.id.startswith("int-") and rec.user_id == "u1" and rec.evidence == ["e1"]
        assert rec.gist and len(rec.gist.split()) <= 6 and "dentist" in rec.gist and "9" not in rec.gist
        assert "tomorrow" not in rec.gist  # the time is the trigger's window
        assert rec.trigger.window_start and rec.trigger.window_text.startswith("tomorrow")
        assert "dentist" in rec.trigger.places and rec.trigger.people == ["Anna"] and rec.for_whom == "Anna"
        assert rec.status == "open" and _states(rec) == [("open", "e1")]
        assert rec.formed_at == "2026-03-02T07:00:00+00:00"
    finally:
        store.close()


def test_open_raised_resolved_and_a_rerun_writes_nothing_twice():
    store = Store(None)
    try:
        store.write("u1", [_formed()])
        book = IntentionBook(store, "u1")
        (rec,) = book.records("open")
        x = _at("e5", "2026-03-06T17:30:00+01:00")
        assert book.after_decision(x, _assist(x, ["e1"])) == 1
        assert book.after_decision(x, _assist(x, ["e1"])) == 0  # the rerun of that step
        assert book.get(rec.id).status == "raised" and book.records("open") == []
        silent = _at("e6", "2026-03-06T17:40:00+01:00")
        assert book.after_decision(silent, {"event_id": "e6", "assist": False, "evidence": []}) == 0
        bought = _built("e7", "2026-03-06T18:00:00+01:00", visual="The user puts oat milk in the basket.",
                        links=[NewLink("e1", "state_change", 0.9)])
        store.write("u1", [bought])
        store.write("u1", [bought])  # a rerun: the event is stored once, nothing derived twice
        got = book.get(rec.id)
        assert got.status == "resolved" and _states(got) == [("open", "e1"), ("raised", "e5"), ("resolved", "e7")]
        assert got.evidence == ["e1", "e7"]
        assert [t.at for t in got.transitions] == ["2026-03-02T07:00:00+00:00", "2026-03-06T16:30:00+00:00",
                                                  "2026-03-06T17:00:00+00:00"]
        # A decided event replayed after the resolution (a rerun) cannot reopen or re-raise it.
        assert book.after_decision(x, _assist(x, ["e1"])) == 0 and book.get(rec.id).status == "resolved"
        (row,) = store.intentions("u1")
        assert row.status == "resolved" and row.resolved_by == "e7"
    finally:
        store.close()


def test_expiry_after_the_configured_horizon():
    cfg = load_config(env={})
    assert expire_hours(cfg) == cfg.reasoner.intention_ttl_hours  # the default horizon
    cfg.memory.intentions.expire_hours = 24
    assert expire_hours(cfg) == 24
    store = Store(None)
    try:
        store.write("u1", [_formed()])
        book = IntentionBook.for_config(store, "u1", cfg)
        early = _at("e2", "2026-03-03T07:00:00+01:00")  # 23 h after it formed
        assert book.after_decision(early, {"assist": False}) == 0 and book.records()[0].status == "open"
        late = _at("e3", "2026-03-03T09:00:00+01:00")  # 25 h
        assert book.after_decision(late, {"assist": False}) == 1
        rec = book.records()[0]
        assert rec.status == "expired" and _states(rec) == [("open", "e1"), ("expired", "e3")]
        assert rec.transitions[-1].at == "2026-03-03T07:00:00+00:00"  # when the horizon passed
        x = _at("e4", "2026-03-03T10:00:00+01:00")
        assert book.after_decision(x, _assist(x, ["e1"])) == 0 and book.records()[0].status == "expired"
    finally:
        store.close()


def test_a_declining_event_dismisses_what_the_assist_raised():
    store = Store(None)
    try:
        store.write("u1", [_formed(), _formed("e2", "2026-03-02T09:00:00+01:00",
                                              audio="[user] I must renew the library books.", seed=1)])
        book = IntentionBook(store, "u1", decline_window_min=10)
        milk, books = book.records()
        x = _at("e5", "2026-03-06T17:30:00+01:00")
        book.after_decision(x, _assist(x, ["e1"]))
        other = _at("e6", "2026-03-06T17:32:00+01:00", audio="[user] Sounds good. [Anna] No thanks, not for me.")
        assert not declines(other) and book.after_decision(other, {"assist": False}) == 0
        no = _at("e7", "2026-03-06T17:33:00+01:00", audio="[user] No thanks, I already did.")
        assert declines(no) and book.after_decision(no, {"assist": False}) == 1
        assert book.after_decision(no, {"assist": False}) == 0  # idempotent
        assert book.get(milk.id).status == "dismissed" and _states(book.get(milk.id))[-1] == ("dismissed", "e7")
        assert book.get(books.id).status == "open"  # that assist never raised it
        y = _at("e8", "2026-03-06T19:00:00+01:00")
        book.after_decision(y, _assist(y, ["e2"]))
        late = _at("e9", "2026-03-06T20:00:00+01:00", audio="[user] Not now.")  # an hour later: not an answer to it
        assert book.after_decision(late, {"assist": False}) == 0 and book.get(books.id).status == "raised"
    finally:
        store.close()


def test_dismissal_through_the_api_and_user_isolation():
    store = Store(None)
    try:
        store.write("u1", [_formed()])
        store.write("u2", [_formed("e9", seed=2)])
        mine, theirs = IntentionBook(store, "u1"), IntentionBook(store, "u2")
        (rec,) = mine.records()
        (other,) = theirs.records()
        assert theirs.dismiss(rec.id) is None and theirs.get(rec.id) is None  # not theirs to see or dismiss
        got = mine.dismiss(rec.id, at=parse_time("2026-03-02T10:00:00+01:00").timestamp())
        assert got.status == "dismissed"
        assert (got.transitions[-1].source, got.transitions[-1].event_id) == ("api", None)
        assert len(mine.dismiss(rec.id).transitions) == 2  # again: nothing new
        assert mine.dismiss("int-000000000000") is None
        assert theirs.records()[0].status == "open" and [r.id for r in mine.records()] == [rec.id] != [other.id]
    finally:
        store.close()


def _legacy(path):
    """Turn a store into one made before intention records (their columns and table absent)."""
    db = sqlite3.connect(path / "memory.sqlite")
    db.executescript("DROP INDEX intentions_id; DROP TABLE intention_transitions;"
                     + "".join(f"ALTER TABLE intentions DROP COLUMN {c};" for c in
                               ("id", "gist", "trigger", "for_whom", "formed_ts", "window_start", "window_end")))
    db.close()


def test_a_store_made_before_records_is_upgraded_on_open(tmp_path):
    s = Store(tmp_path)
    s.write("u1", [_formed(), _formed("e2", "2026-03-02T09:00:00+01:00", seed=1)])
    s.write("u1", [_built("e3", "2026-03-02T12:00:00+01:00", links=[NewLink("e1", "state_change", 0.9)])])
    before = {r.event_id: r for r in s.intentions("u1")}
    s.close()
    _legacy(tmp_path)
    with pytest.raises(StoreError, match="open it once with a writer"):
        Store(tmp_path, readonly=True).intention_records("u1")  # a reader names the way out
    s = Store(tmp_path)
    try:
        recs = {r.evidence[0]: r for r in s.intention_records("u1")}
        assert {r.event_id: r for r in s.intentions("u1")} == before  # nothing lost
        assert _states(recs["e1"]) == [("open", "e1"), ("resolved", "e3")] and recs["e1"].status == "resolved"
        assert _states(recs["e2"]) == [("open", "e2")] and recs["e2"].gist == "oat milk"
        assert recs["e2"].trigger.window_text == "Friday evening"
    finally:
        s.close()
    s = Store(tmp_path)  # opening again changes nothing
    try:
        assert [_states(r) for r in s.intention_records("u1")] == [_states(r) for r in recs.values()]
    finally:
        s.close()


STEPS = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {repo!r})
    from tests.memory.test_intentions import _at, _assist, _built, _formed
    from memory.intentions import IntentionBook
    from memory.store import NewLink, Store
    kill_at = os.environ.get("KILL_AT")
    store = Store(sys.argv[1])
    store.write("u1", [_formed()])
    if kill_at == "open":
        os._exit(9)
    x = _at("e5", "2026-03-06T17:30:00+01:00")
    IntentionBook(store, "u1").after_decision(x, _assist(x, ["e1"]))
    if kill_at == "raised":
        os._exit(9)
    store.write("u1", [_built("e7", "2026-03-06T18:00:00+01:00", links=[NewLink("e1", "state_change", 0.9)])])
    store.close()
""")


@pytest.mark.parametrize("kill_at", ["open", "raised"])
def test_killed_between_two_transitions_loses_and_duplicates_nothing(tmp_path, kill_at):
    script = tmp_path / "steps.py"
    script.write_text(STEPS.format(repo=str(REPO)))
    env = dict(os.environ, KILL_AT=kill_at)
    died = subprocess.run([sys.executable, str(script), str(tmp_path / "store")], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert died.returncode == 9, died.stderr
    s = Store(tmp_path / "store", readonly=True)
    (rec,) = s.intention_records("u1")  # what was committed before the kill is there
    assert rec.status == kill_at
    s.close()
    env.pop("KILL_AT")
    rerun = subprocess.run([sys.executable, str(script), str(tmp_path / "store")], env=env, cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    s = Store(tmp_path / "store", readonly=True)
    try:
        (rec,) = s.intention_records("u1")
        assert _states(rec) == [("open", "e1"), ("raised", "e5"), ("resolved", "e7")]
        assert s.count("u1", "intentions") == 1
    finally:
        s.close()


def _brief_store() -> Store:
    """u1: a window that holds 17:30 on Friday; one to do at the pharmacy; a recent one; an older one;
    one past the horizon; one resolved. u2: one that would rank first."""
    store = Store(None)
    store.write("u1", [
        _formed("old", "2026-03-05T09:00:00+01:00", seed=1,
                audio="[user] I have to return the drill to the hardware shop."),
        _formed("win", "2026-03-05T10:00:00+01:00", seed=2),  # "Friday evening": 6 March 17:00-22:00
        _formed("gone", "2026-02-20T10:00:00+01:00", audio="[user] I need new running shoes.", seed=3),
        _formed("done", "2026-03-06T08:00:00+01:00", audio="[user] I need to pay the gas bill.", seed=4),
        _formed("pharm", "2026-03-06T09:00:00+01:00", audio="[user] I need to get ibuprofen at the pharmacy.", seed=5),
        _formed("new", "2026-03-06T16:00:00+01:00", audio="[user] We need more coffee filters.", seed=6),
    ])
    store.write("u1", [_built("paid", "2026-03-06T12:00:00+01:00", links=[NewLink("done", "state_change", 0.9)])])
    store.write("u2", [_formed("bob", "2026-03-06T17:00:00+01:00", audio="[user] Buy flowers at the pharmacy tonight.",
                               seed=7)])
    return store


def test_brief_ranks_the_near_window_first_and_cuts_at_the_budget():
    store = _brief_store()
    try:
        at = parse_time("2026-03-06T17:30:00+01:00")
        full = build_brief("u1", store.intention_records("u1"), at, "Main Street pharmacy", 1000, 12, 168)
        order = [store.intention_records("u1", None, i.id)[0].evidence[0] for i in full.items]
        assert order == ["win", "pharm", "new", "old"]  # "gone" is past the horizon, "done" resolved
        assert full.items[0].near == 1.0 and full.items[1].match > 0 and full.items[2].recent > full.items[3].recent
        assert all(a.score >= b.score for a, b in zip(full.items, full.items[1:])) and full.omitted == 0
        assert all(abs(i.score - (3 * i.near + 1.5 * i.match + i.recent)) < 1e-3 for i in full.items)
        assert full.tokens == sum(i.tokens for i in full.items) == sum(count_tokens(i.line) for i in full.items)

        budget = full.items[0].tokens + full.items[1].tokens
        cut = build_brief("u1", store.intention_records("u1"), at, "Main Street pharmacy", budget, 12, 168)
        assert [i.id for i in cut.items] == [i.id for i in full.items[:2]] and cut.omitted == 2
        assert cut.tokens <= budget and "+2 more" in render(cut)
        none = build_brief("u1", store.intention_records("u1"), at, None, full.items[0].tokens - 1, 12, 168)
        assert none.items == [] and none.omitted == 4
        # Without a place, only the window and recency count: the window still leads.
        plain = build_brief("u1", store.intention_records("u1"), at, None, 1000, 12, 168)
        assert plain.items[0].id == full.items[0].id and all(i.match == 0 for i in plain.items)
        # The morning before, no window is near: the newest (half an hour old) leads by recency.
        early = build_brief("u1", store.intention_records("u1"), parse_time("2026-03-05T10:30:00+01:00"),
                            None, 1000, 12, 168)
        assert early.items[0].id == full.items[0].id and early.items[0].near == 0
    finally:
        store.close()


def _cli_store(tmp_path):
    s = Store(tmp_path / "store")
    try:
        s.write("u1", [_formed(), _formed("e2", "2026-03-02T09:00:00+01:00",
                                          audio="[user] I need to pick up the parcel at the post office.", seed=1)])
        s.write("u2", [_formed("e9", seed=2, audio="[user] I need to water Bob's tomatoes.")])
        x = _at("e5", "2026-03-06T17:30:00+01:00")
        IntentionBook(s, "u1").after_decision(x, _assist(x, ["e1"]))
    finally:
        s.close()
    return tmp_path / "store"


def test_cli_lists_intentions_as_a_table_or_json(tmp_path, capsys):
    store = _cli_store(tmp_path)
    assert main(["intentions", "--store", str(store), "--user", "u1", "--json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert [(r["gist"], r["status"]) for r in recs] == [("oat milk", "raised"), ("parcel post office", "open")]
    assert [t["state"] for t in recs[0]["transitions"]] == ["open", "raised"] and recs[0]["user_id"] == "u1"
    assert main(["intentions", "--store", str(store), "--user", "u1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["id", "status"] and len(lines) == 3
    assert lines[1].split()[:2] == [recs[0]["id"], "raised"] and lines[1].endswith("oat milk")
    assert main(["intentions", "--store", str(store), "--user", "u1", "--status", "open", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [recs[1]["id"]]
    assert main(["intentions", "--store", str(store), "--user", "u2", "--json"]) == 0
    theirs = json.loads(capsys.readouterr().out)
    assert [r["gist"] for r in theirs] == ["water tomatoes"] and not {r["id"] for r in theirs} & {r["id"] for r in recs}
    assert main(["intentions", "--store", str(store), "--user", "u3"]) == 0
    assert "no intentions" in capsys.readouterr().out
    assert main(["intentions", "--store", str(tmp_path / "nope"), "--user", "u1"]) == 2
    assert "no memory store" in capsys.readouterr().err


def test_cli_brief_text_and_json(tmp_path, capsys):
    store = _cli_store(tmp_path)
    argv = ["brief", "--store", str(store), "--user", "u1", "--at", "2026-03-06T17:45:00+01:00"]
    assert main(argv + ["--location", "post office", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [i["gist"] for i in got["items"]] == ["oat milk", "parcel post office"] and got["user_id"] == "u1"
    assert got["items"][0]["near"] == 1.0 and got["items"][1]["match"] == 1.0 and got["budget"] == 200
    assert main(argv + ["--budget", str(got["items"][0]["tokens"])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == got["items"][0]["line"] and "+1 more" in out[1]
    assert main(["brief", "--store", str(store), "--user", "u2", "--at", "2026-03-02T09:00:00+01:00", "--json"]) == 0
    assert [i["gist"] for i in json.loads(capsys.readouterr().out)["items"]] == ["water tomatoes"]
    assert main(argv[:-2] + ["--at", "yesterday"]) == 2
    assert "--at" in capsys.readouterr().err


def test_closed_at_names_only_events_whose_intentions_are_all_closed():
    store = Store(None)
    try:
        store.write("u1", [_formed(), _formed("e2", "2026-03-02T09:00:00+01:00", seed=1)])
        book = IntentionBook(store, "u1")
        first = next(r for r in book.records() if r.evidence[0] == "e1")
        assert book.closed_at(["e1", "e2", "nope"]) == {}
        book.dismiss(first.id, at=parse_time("2026-03-03T08:00:00+01:00").timestamp())
        assert book.closed_at(["e1", "e2"]) == {"e1": f"intention {first.id} from e1 is dismissed (its record)"}
        bought = _built("e7", "2026-03-06T18:00:00+01:00", links=[NewLink("e2", "state_change", 0.9)])
        store.write("u1", [bought])
        assert "is resolved (its record)" in book.closed_at(["e2"])["e2"]
        assert IntentionBook(store, "u2").closed_at(["e1"]) == {}  # another user's records
    finally:
        store.close()
