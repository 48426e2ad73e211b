"""`promem remember` / `promem recall` as real subprocesses, including kill -9 in the middle."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.memory.conftest import env_for
from tests.support.data import pick

PROMEM = [sys.executable, "-m", "cli.main"]


def write_events(path, instances, copies=1):
    rows = []
    for c in range(copies):
        for n, inst in enumerate(instances):
            for e in inst.events:
                rows.append(dict(e.dump(), id=f"c{c}-i{n}-{e.id}"))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def count(store, user="u1"):
    db = sqlite3.connect(store / "memory.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM events WHERE user_id=?", (user,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


@pytest.mark.slow
def test_kill_9_during_remember_then_rerun_keeps_each_event_once(artifacts, instances, tmp_path, cfg):
    events = tmp_path / "events.jsonl"
    rows = write_events(events, instances, copies=1)
    store = tmp_path / "store"
    cmd = PROMEM + ["remember", str(events), "--store", str(store), "--batch", "2"]
    proc = subprocess.Popen(cmd, env=env_for(artifacts), cwd=os.getcwd(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (store / "memory.sqlite").exists() and count(store) >= 6:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "remember finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = count(store)
    assert 0 < killed_at < len(rows)

    done = subprocess.run(cmd, env=env_for(artifacts), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{len(rows) - killed_at} new, {killed_at} already remembered" in done.stdout

    db = sqlite3.connect(store / "memory.sqlite")
    ids = [r[0] for r in db.execute("SELECT id FROM events WHERE user_id='u1'")]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # each exactly once
    per_event = dict(db.execute("SELECT event_id, COUNT(*) FROM cues WHERE kind='event' GROUP BY event_id"))
    assert set(per_event.values()) == {1}
    db.close()
    from memory.api import open_memory

    with open_memory(cfg, store, "u1") as mem:
        c = mem.check()
        assert c["content_index"] == c["facts"] and c["cue_index"] == c["event_cues"] == len(rows)
        # the index files on disk (not only the caught-up copy) cover the store
        assert mem.content.max_id == mem.store.max_id("u1", "facts")


def test_remember_then_recall_prints_score_and_path(artifacts, instances, tmp_path):
    inst = pick(instances, "state_change", 0)
    formed, changed = inst.intentions[0].formation, inst.intentions[0].state_change
    events = tmp_path / "events.jsonl"
    past = [e.dump() for e in inst.events if e.id != inst.decision_event]
    lines = [json.dumps(r) for r in past]
    lines.insert(3, '{"id": "broken", "time": ')  # malformed JSON
    lines.insert(5, '{"id": "novisual", "time": "2026-09-17T20:00:00-07:00"}')  # no visual/audio
    events.write_text("\n".join(lines) + "\n")
    store = tmp_path / "store"
    env = env_for(artifacts)
    r = subprocess.run(PROMEM + ["remember", str(events), "--store", str(store), "--user", "imani"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1  # bad lines are reported, the rest is remembered
    assert f"{events}:4: malformed JSON" in r.stderr and f"{events}:6: event needs" in r.stderr
    assert f"imani: {len(past)} new" in r.stdout

    cur = tmp_path / "now.json"
    cur.write_text(json.dumps(inst.event(inst.decision_event).dump()))
    r = subprocess.run(PROMEM + ["recall", "--store", str(store), "--user", "imani", "--event", str(cur), "--json"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(got) == 10 and all(g["path"] in ("content", "cue", "time", "link") for g in got)
    ids = [g["event_id"] for g in got]
    assert formed in ids and changed in ids
    links = next(g for g in got if g["event_id"] == formed)["links"]
    assert any({"event_id": changed, "kind": "state_change"}.items() <= link.items() for link in links), links

    r = subprocess.run(PROMEM + ["recall", "--store", str(store), "--user", "nobody", "--event", str(cur), "-k", "3"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "no memories" in r.stderr
