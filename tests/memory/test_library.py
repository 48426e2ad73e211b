"""The library for chat agents (memory.Memory, prefetch) on real SQLite, FAISS and the bundled MiniLM.

The CPU profile runs here with the untuned MiniLM as cue encoder and no linker, so these tests
need no trained artifacts; the README's example is run as written."""
from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import REPO_ROOT, load_config
from core.tokens import count_tokens
from core.userid import BadUserId
from memory import EventConflict, Memory, MemoryItem, prefetch
from memory.api import open_memory
from memory.lock import StoreError
from memory.prefetch_block import HEADER, render_block
from memory.store import DB_NAME, Built, NewCue, NewLink, Store

T0 = "2026-03-02T08:15:00+01:00"
OAT = [{"role": "system", "content": "You are a helpful assistant."},
       {"role": "user", "content": "We are out of oat milk, I'll pick some up on the way home."},
       {"role": "assistant", "content": "Noted: oat milk on the way home."}]


@pytest.fixture(scope="module")
def lib_cfg():
    cfg = load_config(env={})
    cfg.memory.construction.cue_encoder = "base"
    cfg.memory.construction.linker = "none"
    return cfg


@pytest.fixture()
def mem(lib_cfg, tmp_path) -> Memory:
    return Memory(store=tmp_path / "store", config=lib_cfg)


def readme_example() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Library\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER", "base")
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__LINKER", "none")
    exec(compile(readme_example(), "README.md (Library)", "exec"), {})
    out = capsys.readouterr().out
    assert (tmp_path / "runs" / "library" / DB_NAME).is_file()  # the store lies where the example said
    block = out[out.index(HEADER):]
    assert "oat milk" in block and "Dentist" not in out  # bob's memory never shows up for alice
    assert re.search(r"^2 memories left; 0 intentions$", out, re.M)
    assert len(re.findall(r"^\d\.\d\d (content|cue|time|link) ", out, re.M)) == 3


def test_add_turns_ids_and_metadata(mem):
    ids = mem.add(OAT, user_id="alice", time=T0, metadata={"session": "s1"})
    assert len(ids) == 2 and all(i.startswith("m-") for i in ids)  # the system turn is no memory
    items = mem.get_all(user_id="alice")
    assert [i.id for i in items] == ids
    assert [i.text for i in items] == ["[user] We are out of oat milk, I'll pick some up on the way home.",
                                       "[assistant] Noted: oat milk on the way home."]
    assert [i.time for i in items] == [T0, "2026-03-02T08:15:01+01:00"]  # turns keep their order
    assert all(i.metadata == {"session": "s1"} and i.score is None and i.kind == "stored" for i in items)
    # the same turns at the same time are the same events: stored once
    assert mem.add(OAT, user_id="alice", time=T0, metadata={"session": "s1"}) == ids
    assert len(mem.get_all(user_id="alice")) == 2
    event = {"time": "2026-03-03T09:00:00+01:00", "location": "kitchen", "visual": "The fridge is empty."}
    (eid,) = mem.add(event, user_id="alice")
    assert mem.get_all(user_id="alice")[-1].text == "[kitchen] The fridge is empty."
    assert mem.add(event, user_id="alice") == [eid]


def test_bad_input_names_the_problem_and_stores_nothing(mem):
    mem.add("Groceries on Friday.", user_id="alice", time=T0)
    with pytest.raises(ValueError, match="item 1: role must be one of"):
        mem.add([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], user_id="alice")
    with pytest.raises(ValueError, match="item 0: a chat message is a dict with a string 'content' and a 'role'"):
        mem.add([{"content": "no speaker"}], user_id="alice")
    with pytest.raises(ValueError, match="no UTC offset"):
        mem.add("hello", user_id="alice", time="2026-03-02T08:15:00")
    with pytest.raises(ValueError, match="belongs to user 'bob'"):
        mem.add({"id": "e9", "time": T0, "audio": "x", "user_id": "bob"}, user_id="alice")
    with pytest.raises(ValueError, match="limits.max_text_chars"):
        mem.add("x" * 9000, user_id="alice")
    mem.add({"id": "e1", "time": T0, "audio": "the bike light is broken"}, user_id="alice")
    with pytest.raises(EventConflict, match="'e1'.*nothing of this add was stored"):
        mem.add([{"id": "e2", "time": T0, "audio": "new"}, {"id": "e1", "time": T0, "audio": "changed"}],
                user_id="alice")
    texts = [i.text for i in mem.get_all(user_id="alice")]
    assert texts == ["Groceries on Friday.", "the bike light is broken"]


def test_add_search_get_all_delete_round_trip(mem, lib_cfg, caplog):
    ids = mem.add(OAT, user_id="alice", time=T0)
    mem.add("Maya visits on Saturday; she is vegan.", user_id="alice", time="2026-03-02T19:40:00+01:00")
    mem.add("The dentist moved my appointment to Friday.", user_id="alice", time="2026-03-03T10:00:00+01:00")
    hits = mem.search("oat milk", user_id="alice", limit=5)
    assert all(isinstance(h, MemoryItem) and h.kind in ("content", "cue", "time", "link") for h in hits)
    assert hits[0].id in ids and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert mem.search("oat milk", user_id="alice", limit=1)[0].id == hits[0].id

    for i in ids:
        assert mem.delete(i, user_id="alice")
    assert not mem.delete(ids[0], user_id="alice")  # already gone
    for query in ("oat milk", "what do I buy on the way home?", "Noted"):
        got = mem.search(query, user_id="alice", limit=10)
        assert got and not any(h.id in ids or "oat milk" in h.text for h in got)
    assert "oat milk" not in prefetch("alice", "oat milk", memory=mem)
    assert len(mem.get_all(user_id="alice")) == 2
    # the saved index files match SQLite: reopening them needs no rebuild
    with caplog.at_level(logging.WARNING, logger="memory.index"):
        with open_memory(lib_cfg, mem.path, "alice", readonly=True) as m:
            c = m.check()
    assert not caplog.records
    assert c["events"] == 2 and c["content_index"] == c["facts"] > 0 and c["cue_index"] == c["event_cues"] > 0


def test_delete_removes_derived_rows_and_reopens_resolved_intention(tmp_path):
    """Store.delete_event on rows construction could write: facts, cues, links, intentions."""
    import numpy as np

    from core.formats import Event

    def built(eid, minute, **kw):
        vec = np.ones(4, dtype=np.float32) / 2
        ev = Event(id=eid, time=f"2026-03-02T08:{minute:02d}:00+00:00", audio=eid)
        return Built(ev, ev.dt.timestamp(), vec, facts=[(eid, vec)], cues=[NewCue("event", eid, vec)], **kw)

    store = Store(tmp_path)
    try:
        store.write("u1", [built("form", 1, intentions=[("buy oat milk", 0.9)])])
        store.write("u1", [built("change", 2, links=[NewLink("form", "state_change", 0.8)])])
        store.write("u2", [built("form", 1, intentions=[("buy oat milk", 0.9)])])
        assert store.intentions("u1")[0].status == "resolved"
        lib = Memory(store=tmp_path, config=load_config(env={}))  # reading intentions loads no model
        (rec,) = lib.intentions(user_id="u1")
        assert (rec.evidence[0], rec.gist, rec.status) == ("form", "oat milk", "resolved")
        assert [(t.state, t.event_id) for t in rec.transitions] == [("open", "form"), ("resolved", "change")]
        assert [i.status for i in lib.intentions(user_id="u2")] == ["open"] and lib.intentions(user_id="u3") == []
        assert store.delete_event("u1", "change")
        assert [(r.status, r.resolved_by) for r in store.intentions("u1")] == [("open", None)]
        assert store.links_touching("u1", ["form"]) == []
        assert store.delete_event("u1", "form")
        for table in ("events", "facts", "cues", "links", "intentions"):
            assert store.count("u1", table) == 0
            assert store.count("u2", table) == (0 if table == "links" else 1)  # the other user keeps hers
        n_vecs = [store.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("fact_vecs", "cue_vecs", "event_vecs")]
        assert n_vecs == [1, 1, 1]
        assert not store.delete_event("u1", "form")
    finally:
        store.close()


def test_one_users_memory_is_never_anothers(mem):
    a = mem.add("My PIN reminder: the blue notebook in the drawer.", user_id="alice", time=T0)
    b = mem.add("I am allergic to peanuts.", user_id="bob", time=T0)
    for query in ("peanuts allergy", "blue notebook drawer"):
        assert not {h.id for h in mem.search(query, user_id="alice", limit=10)} & set(b)
        assert not {h.id for h in mem.search(query, user_id="bob", limit=10)} & set(a)
    assert [i.id for i in mem.get_all(user_id="alice")] == a
    assert "peanuts" not in prefetch("alice", "peanuts allergy", memory=mem)
    assert "peanuts" in prefetch("bob", "peanuts allergy", memory=mem)
    assert not mem.delete(b[0], user_id="alice")  # another user's id deletes nothing
    assert [i.id for i in mem.get_all(user_id="bob")] == b
    assert mem.search("anything", user_id="carol") == [] and mem.get_all(user_id="carol") == []


@pytest.mark.parametrize("bad", ["", "../etc", "a/b", None, "x" * 200])
def test_bad_user_id(mem, bad, caplog):
    mem.add("something", user_id="alice", time=T0)
    for call in (lambda: mem.add("hi", user_id=bad), lambda: mem.search("hi", user_id=bad),
                 lambda: mem.get_all(user_id=bad), lambda: mem.delete("m-1", user_id=bad),
                 lambda: mem.intentions(user_id=bad)):
        with pytest.raises(BadUserId, match="user id must be"):
            call()
    with caplog.at_level(logging.WARNING, logger="memory.prefetch_block"):
        assert prefetch(bad, "hi", memory=mem) == ""
    assert any("BadUserId" in r.getMessage() for r in caplog.records)


def item(text, n=0):
    return MemoryItem(id=f"e{n}", text=text, time=f"2026-03-02T08:{n:02d}:00+01:00", score=1.0 - n / 100,
                      kind="content")


def test_prefetch_budget_cuts_the_last_item():
    long = " ".join(f"word{n}" for n in range(80))
    items = [item("Maya is vegan.", 0), item(long, 1), item("Never shown.", 2)]
    whole = render_block(items, 10_000)
    assert whole.splitlines() == [HEADER, "- 2026-03-02 08:00: Maya is vegan.", f"- 2026-03-02 08:01: {long}",
                                  "- 2026-03-02 08:02: Never shown."]
    for budget in (64, 100, 200):
        block = render_block(items, budget)
        lines = block.splitlines()
        assert count_tokens(block) <= budget
        assert lines[:2] == whole.splitlines()[:2] and len(lines) == 3  # cut item is the last one
        assert lines[2].endswith("...") and long.startswith(lines[2][len("- 2026-03-02 08:01: "):-3])
    # room for the first item but not one word more of the second: no cut line
    assert render_block(items, count_tokens(whole.splitlines()[0] + "\n" + whole.splitlines()[1])) \
        == "\n".join(whole.splitlines()[:2])
    assert render_block(items, count_tokens(HEADER)) == ""  # no room for any memory: no block
    assert render_block([], 512) == ""


def test_prefetch_budget_and_dedupe_through_memory(mem):
    mem.add("Maya is vegan, so no cheese on the pizza.", user_id="alice", time=T0)
    mem.add("Maya is vegan,  so no cheese on the pizza.", user_id="alice", time="2026-03-03T08:15:00+01:00")
    long = "Shopping list for the party: " + ", ".join(f"item number {n}" for n in range(60)) + "."
    mem.add(long, user_id="alice", time="2026-03-03T09:00:00+01:00")
    hits = mem.search("what does Maya eat at the party?", user_id="alice", limit=5)
    assert len({h.id for h in hits}) == 3  # both vegan events are recalled ...
    block = prefetch("alice", "what does Maya eat at the party?", memory=mem)
    assert block.startswith(HEADER + "\n") and block.count("Maya is vegan") == 1  # ... and shown once
    assert len(block.splitlines()) == 3 and count_tokens(block) <= 512
    small = prefetch("alice", "what does Maya eat at the party?", memory=mem, token_budget=60)
    assert small and count_tokens(small) <= 60 and small.endswith("...")
    assert prefetch("alice", "   ", memory=mem) == ""


def test_prefetch_failures_give_an_empty_block_and_a_log_record(mem, lib_cfg, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="memory.prefetch_block")
    assert prefetch("alice", "oat milk", memory=mem) == ""  # nothing added yet: the store is missing
    assert "no memory store at" in caplog.text
    mem.add("oat milk is out", user_id="alice", time=T0)

    caplog.clear()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / DB_NAME).write_bytes(b"this is not a database" * 100)
    assert prefetch("alice", "oat milk", memory=Memory(store=broken, config=lib_cfg)) == ""
    assert "StoreError" in caplog.text and str(broken) in caplog.text

    caplog.clear()
    cfg = lib_cfg.model_copy(deep=True)
    cfg.memory.construction.cue_encoder = str(tmp_path / "no-such-cue-encoder")
    assert prefetch("alice", "oat milk", memory=Memory(store=mem.path, config=cfg)) == ""
    assert "MissingArtifact" in caplog.text
    assert "oat milk" in prefetch("alice", "oat milk", memory=mem)  # the store itself is fine


def test_reads_work_while_another_process_writes(mem):
    mem.add("The bike light is broken.", user_id="alice", time=T0)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from memory.store import Store; s = Store(sys.argv[1]); "
                               "print('ready', flush=True); sys.stdin.readline()", str(mem.path)],
        cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert mem.search("bike light", user_id="alice")[0].text == "The bike light is broken."
        assert [i.text for i in mem.get_all(user_id="alice")] == ["The bike light is broken."]
        assert mem.intentions(user_id="alice") == []
        assert "bike light" in prefetch("alice", "bike light", memory=mem)
        with pytest.raises(StoreError, match=f"in use by another writer \\(pid {holder.pid}"):
            mem.add("Buy a new bike light.", user_id="alice")
        with pytest.raises(StoreError, match="in use by another writer"):
            mem.delete(mem.get_all(user_id="alice")[0].id, user_id="alice")
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    mem.add("Buy a new bike light.", user_id="alice")  # the lock went with the writer
    assert len(mem.get_all(user_id="alice")) == 2


def test_memory_config_argument(tmp_path, lib_cfg):
    assert Memory(store=tmp_path, config=lib_cfg).cfg is lib_cfg
    assert Memory(store=tmp_path, config=REPO_ROOT / "configs" / "cpu.yaml").cfg.profile == "cpu"
    assert Memory(config=lib_cfg).path == REPO_ROOT / lib_cfg.memory.store
    with pytest.raises(TypeError, match="config must be"):
        Memory(store=tmp_path, config=42)


def test_per_user_memory_class_is_still_where_it_was():
    import memory.api

    assert memory.api.Memory is not Memory and Path(memory.api.__file__).name == "api.py"
