"""One writer per store (a second process is refused by name), indexes rebuilt from SQLite when
their counts disagree, readers that neither lock nor write, and clear messages for stores and
files that are not what the command expects."""
from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from cli.main import main
from memory.api import open_memory
from memory.lock import StoreError

# A real second process that opens the store as a writer and keeps it open until its stdin closes.
HOLD = ("import sys\nfrom memory.store import Store\ns = Store(sys.argv[1])\nprint('holding', flush=True)\n"
        "sys.stdin.read()\ns.close()\n")


@pytest.fixture
def memory_env(monkeypatch, artifacts):
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER", str(artifacts / "cue-encoder"))
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__LINKER", str(artifacts / "linker"))


def write_events(path, inst, prefix=""):
    path.write_text("".join(json.dumps(dict(e.dump(), id=prefix + e.id)) + "\n" for e in inst.events))
    return [prefix + e.id for e in inst.events]


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_writer_process_is_refused_and_a_reader_still_works(memory_env, cfg, instances, tmp_path, capsys):
    inst = instances[0]
    store, events, more = tmp_path / "store", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first = write_events(events, inst)
    write_events(more, inst, prefix="b-")
    assert main(["remember", str(events), "--store", str(store)]) == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        capsys.readouterr()
        assert main(["remember", str(more), "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert f"store {store} is in use by another writer (pid {holder.pid}" in err
        with pytest.raises(StoreError, match="in use by another writer"):
            open_memory(cfg, store, "u1")
        # A reader needs no lock and writes nothing, even where the index files are stale.
        (store / "index").rename(tmp_path / "index-aside")
        before = snapshot(store)
        now = tmp_path / "now.json"
        now.write_text(json.dumps(inst.event(inst.decision_event).dump()))
        assert main(["recall", "--store", str(store), "--event", str(now), "--json"]) == 0
        got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert got and {g["event_id"] for g in got} <= set(first)
        assert snapshot(store) == before
        (tmp_path / "index-aside").rename(store / "index")
    finally:
        holder.communicate(timeout=60)
    assert holder.returncode == 0
    assert main(["remember", str(more), "--store", str(store)]) == 0  # the lock went with its holder
    with open_memory(cfg, store, "u1") as mem:
        c = mem.check()
        assert c["events"] == 2 * len(first) and c["content_index"] == c["facts"] and c["cue_index"] == c["event_cues"]


def test_an_index_missing_vectors_is_rebuilt_from_sqlite_on_open(cfg, instances, tmp_path, caplog):
    # Two processes that each saved their own index file leave one that misses the other's rows
    # while its newest id is the store's newest: catching up adds nothing, only a count check sees it.
    inst = instances[1]
    with open_memory(cfg, tmp_path, "u1") as mem:
        mem.add_many(inst.events)
        full = mem.check()
        for index in (mem.content, mem.cues):
            ids, _ = mem.store.vectors_after("u1", index.table, 0, index.dim)
            index.index.remove_ids(ids[:-1:2].copy())
            index.dirty = True
        assert mem.check() != full
    with caplog.at_level(logging.WARNING, logger="memory.index"):
        with open_memory(cfg, tmp_path, "u1") as mem:
            assert mem.check() == full
    assert "rebuilding it from the store" in caplog.text
    with open_memory(cfg, tmp_path, "u1") as mem:  # and the repaired file was saved
        assert mem.content.ntotal == full["facts"] and mem.cues.ntotal == full["event_cues"]


def test_stores_and_files_that_are_not_what_they_should_be_get_a_message(memory_env, instances, tmp_path, capsys):
    events = tmp_path / "events.jsonl"
    write_events(events, instances[0])
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    assert main(["remember", str(events), "--store", str(a_file)]) == 2
    assert f"store {a_file} is a file" in capsys.readouterr().err
    assert main(["decide", str(events), "--store", str(a_file), "-o", str(tmp_path / "d.jsonl")]) == 2
    assert f"store {a_file} is a file" in capsys.readouterr().err

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "memory.sqlite").write_bytes(b"this is not a database" * 100)
    assert main(["remember", str(events), "--store", str(broken)]) == 2
    assert f"{broken / 'memory.sqlite'}: not a usable memory store" in capsys.readouterr().err
    now = tmp_path / "now.json"
    now.write_text(json.dumps(instances[0].events[-1].dump()))
    assert main(["recall", "--store", str(broken), "--event", str(now)]) == 2
    assert f"{broken / 'memory.sqlite'}: cannot be read" in capsys.readouterr().err

    for cmd in (["remember", str(tmp_path)], ["decide", str(tmp_path), "-o", str(tmp_path / "d.jsonl")]):
        assert main([*cmd, "--store", str(tmp_path / "s")]) == 2
        assert f"{tmp_path} is a folder, not an events file" in capsys.readouterr().err


def test_remember_skips_an_id_sent_again_with_other_content_naming_it(memory_env, instances, tmp_path, capsys):
    inst = instances[0]
    store, first, again = tmp_path / "store", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_events(first, inst)
    assert main(["remember", str(first), "--store", str(store)]) == 0
    e0, e1 = inst.events[0].dump(), inst.events[1].dump()
    new = dict(e1, id="brand-new", visual="A new moment.")
    rows = [e0, dict(e1, visual="Not what was said before."), new, dict(new, visual="Changed in the same file."), new]
    again.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["remember", str(again), "--store", str(store)]) == 1
    out, err = capsys.readouterr()
    assert f"{again}:2: event id {e1['id']!r} is already remembered with other content; skipped" in err
    assert f"{again}:4: event id 'brand-new' is already remembered with other content; skipped" in err
    assert "u1: 1 new, 2 already remembered" in out
    from memory.store import Store

    s = Store(store, readonly=True)
    got = s.events("u1", [e1["id"], "brand-new"])
    assert got[e1["id"]][0].visual == e1["visual"] and got["brand-new"][0].visual == "A new moment."
    assert s.count("u1", "events") == len(inst.events) + 1
    s.close()


def test_an_empty_events_file_is_the_same_error_for_remember_and_decide(memory_env, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["remember", str(empty), "--store", str(tmp_path / "s")]) == 2
    assert f"promem remember: {empty} holds no valid events (it is empty)" in capsys.readouterr().err
    assert main(["decide", str(empty), "--store", str(tmp_path / "s"), "-o", str(tmp_path / "d.jsonl")]) == 2
    assert f"promem decide: {empty} holds no valid events (it is empty)" in capsys.readouterr().err


def _make_unwritable(paths):
    """Make files and folders unwritable for this user; returns the undo. As root, permission bits
    do not stop writes, so the immutable attribute stands in for another user's store."""
    import os
    import shutil

    if os.geteuid() != 0:
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return lambda: [p.chmod(0o755 if p.is_dir() else 0o644) for p in paths]
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", *map(str, paths)]).returncode != 0:
        subprocess.run(["chattr", "-i", *map(str, paths)], stderr=subprocess.DEVNULL)
        pytest.skip("this machine cannot make a store unwritable for root (no chattr +i)")
    return lambda: subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def test_a_store_this_user_may_not_write_is_read_by_recall_and_refused_by_remember(memory_env, instances,
                                                                                   tmp_path, capsys):
    inst = instances[0]
    store, events = tmp_path / "store", tmp_path / "a.jsonl"
    write_events(events, inst)
    assert main(["remember", str(events), "--store", str(store)]) == 0
    now = tmp_path / "now.json"
    now.write_text(json.dumps(inst.event(inst.decision_event).dump()))
    undo = _make_unwritable(sorted(store.rglob("*"), reverse=True) + [store])
    try:
        before = snapshot(store)
        capsys.readouterr()
        assert main(["recall", "--store", str(store), "--event", str(now), "--json"]) == 0
        assert capsys.readouterr().out.strip()
        more = tmp_path / "b.jsonl"
        write_events(more, inst, prefix="b-")
        assert main(["remember", str(more), "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert f"promem remember: store {store}: cannot write {store / 'writer.lock'}" in err
        assert snapshot(store) == before
    finally:
        undo()
