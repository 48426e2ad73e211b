"""The online loop through `promem decide`: real memory (SQLite + FAISS) and a trained gate;
decisions in time order from the past only, bad lines skipped, resume after interruption,
the guard in action, one user's events kept from another's memory."""
import json

import pytest

from cli.main import main
from core.formats import Decision

pytestmark = pytest.mark.slow


@pytest.fixture
def env(monkeypatch, trained_gate):
    # Real memory without trained memory artifacts (base MiniLM cues, no linker): the gate is under test.
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER", "base")
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__LINKER", "none")
    monkeypatch.setenv("PROMEM_REASONER__GATE__PATH", str(trained_gate[0]))


def _write_events(path, inst, extra_lines=()):
    lines = [json.dumps(e.dump()) for e in inst.events]
    lines[3:3] = list(extra_lines)
    path.write_text("\n".join(lines) + "\n")


def _decisions(path):
    return [Decision.model_validate(json.loads(line)) for line in path.read_text().splitlines()]


def test_decide_walks_events_resumes_and_skips_bad_lines(env, tmp_path, sample_instances, caplog):
    inst = next(i for i in sample_instances if i.variant == "positive")
    events = tmp_path / "events.jsonl"
    _write_events(events, inst, ['{"id": "bad1", "time": "2026-09-17T20:00:00-07:00"}', "{not json"])
    out, store = tmp_path / "decisions.jsonl", tmp_path / "store"
    argv = ["decide", str(events), "--store", str(store), "-o", str(out), "--persona", inst.persona]
    assert main(argv) == 0
    assert "events.jsonl:4" in caplog.text and "events.jsonl:5" in caplog.text  # named, then skipped
    ds = _decisions(out)
    assert [d.event_id for d in ds] == [e.id for e in inst.events]
    times = {e.id: e.dt for e in inst.events}
    for d in ds:
        assert all(times[r] < times[d.event_id] for r in d.retrieved)  # memory of the past only
        assert "retrieve" in d.timing_ms and d.llm_called is False
    assert ds[0].retrieved == [] and ds[0].assist is False
    assert ds[-1].retrieved  # the decision moment recalls earlier events

    # Interrupted run: the last decision half-written. The rerun redoes only that event.
    text = out.read_text()
    out.write_text(text[: text.rstrip("\n").rfind("\n") + 1] + '{"event_id": "e2')
    assert main(argv) == 0
    again = _decisions(out)
    assert [d.event_id for d in again] == [e.id for e in inst.events]
    assert again[-1].retrieved == ds[-1].retrieved


def _positive_with_a_gate_firing_everywhere(monkeypatch, tmp_path, sample_instances):
    """A positive timeline's events file, with the gate at threshold 0 (it fires at every moment, one
    evidence each), so only the guard keeps the wearable from repeating itself."""
    monkeypatch.setenv("PROMEM_REASONER__GATE__USE_CALIBRATED", "false")
    monkeypatch.setenv("PROMEM_REASONER__GATE__THRESHOLD", "0.0")
    monkeypatch.setenv("PROMEM_REASONER__GATE__MAX_EVIDENCE", "1")
    inst = next(i for i in sample_instances if i.variant == "positive")
    events = tmp_path / "events.jsonl"
    _write_events(events, inst)
    return events


def test_loop_guard_does_not_repeat_a_raised_intention(monkeypatch, env, tmp_path, sample_instances):
    events = _positive_with_a_gate_firing_everywhere(monkeypatch, tmp_path, sample_instances)
    out = tmp_path / "d.jsonl"
    assert main(["decide", str(events), "--store", str(tmp_path / "s"), "-o", str(out)]) == 0
    ds = _decisions(out)
    raised = [d.evidence[0] for d in ds if d.assist]
    assert raised and len(raised) == len(set(raised))  # no intention raised twice
    assert any(d.guard is not None for d in ds)


def test_events_of_another_user_are_not_remembered(env, tmp_path, sample_instances, caplog):
    inst = next(i for i in sample_instances if i.variant == "positive")
    rows = []
    for n, e in enumerate(inst.events):
        row = e.dump()
        row["user_id"] = "alice" if n % 2 else "bob"
        rows.append(json.dumps(row))
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(rows) + "\n")
    out = tmp_path / "alice.jsonl"
    assert main(["decide", str(events), "--store", str(tmp_path / "s"), "--user", "alice", "-o", str(out)]) == 0
    alice = {e.id for n, e in enumerate(inst.events) if n % 2}
    ds = _decisions(out)
    assert {d.event_id for d in ds} == alice
    assert all(set(d.retrieved) <= alice for d in ds)
    assert "other users" in caplog.text


def test_phrases_past_the_calendar_are_decided_and_remembered(env, tmp_path, sample_instances):
    import sqlite3

    inst = next(i for i in sample_instances if i.variant == "positive")
    far = [{"id": "far-weeks", "time": inst.events[1].time, "audio": "Let's meet again in 500000 weeks."},
           {"id": "far-days", "time": inst.events[2].time, "audio": "Back in 99999999999 days, promise."},
           {"id": "last-day", "time": "9999-12-31T23:00:00+00:00", "audio": "Let's talk tomorrow at 9."}]
    events = tmp_path / "events.jsonl"
    _write_events(events, inst, [json.dumps(r) for r in far])
    out, store = tmp_path / "d.jsonl", tmp_path / "s"
    argv = ["decide", str(events), "--store", str(store), "-o", str(out)]
    assert main(argv) == 0
    want = [e.id for e in inst.events] + [r["id"] for r in far]
    assert sorted(d.event_id for d in _decisions(out)) == sorted(want)
    assert main(argv) == 0  # a rerun at the same events decides nothing twice
    assert sorted(d.event_id for d in _decisions(out)) == sorted(want)
    db = sqlite3.connect(store / "memory.sqlite")
    assert sorted(r[0] for r in db.execute("SELECT id FROM events")) == sorted(want)
    db.close()


# `promem decide` in a real process that dies (os._exit, as kill -9 would) at the first assist,
# after the guard has saved its update and before the decision row reaches the decisions file.
CRASH_AT_FIRST_ASSIST = """
import os, sys
import core.jsonio, reasoner.guard, reasoner.loop
real = core.jsonio.append_jsonl
def append(path, row):
    if row.get("assist"):
        os._exit(9)
    real(path, row)
for module in (reasoner.guard, reasoner.loop):
    if hasattr(module, "append_jsonl"):
        module.append_jsonl = append
from cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_crash_between_the_guard_update_and_the_decision_loses_no_assist(monkeypatch, env, tmp_path,
                                                                           sample_instances):
    import subprocess
    import sys

    events = _positive_with_a_gate_firing_everywhere(monkeypatch, tmp_path, sample_instances)

    def argv(name):
        return ["decide", str(events), "--store", str(tmp_path / name), "-o", str(tmp_path / f"{name}.jsonl")]

    assert main(argv("clean")) == 0
    clean = [(d.event_id, d.assist, d.evidence, d.message) for d in _decisions(tmp_path / "clean.jsonl")]
    first_assist = next(e for e, assist, _, _ in clean if assist)
    crashed = subprocess.run([sys.executable, "-c", CRASH_AT_FIRST_ASSIST, *argv("crashed")],
                             capture_output=True, text=True, timeout=600)
    assert crashed.returncode == 9, crashed.stderr[-2000:]
    assert first_assist not in {d.event_id for d in _decisions(tmp_path / "crashed.jsonl")}
    assert main(argv("crashed")) == 0  # the rerun
    again = [(d.event_id, d.assist, d.evidence, d.message) for d in _decisions(tmp_path / "crashed.jsonl")]
    assert again == clean


def test_an_id_sent_again_with_other_content_is_skipped_and_decided_once(env, tmp_path, sample_instances, caplog):
    inst = next(i for i in sample_instances if i.variant == "positive")
    e2, e3 = inst.events[2], inst.events[3]
    changed = dict(e2.dump(), visual="Something else entirely happens here.")
    events = tmp_path / "events.jsonl"
    _write_events(events, inst, [json.dumps(changed), json.dumps(e3.dump())])  # a clash, and a plain repeat
    out, store = tmp_path / "d.jsonl", tmp_path / "s"
    assert main(["decide", str(events), "--store", str(store), "-o", str(out)]) == 0
    assert f"event id {e2.id!r} is already remembered or listed with other content; skipped" in caplog.text
    ids = [d.event_id for d in _decisions(out)]
    assert sorted(ids) == sorted(e.id for e in inst.events)  # one row per id

    caplog.clear()  # a later run with that id changed: still one row, the first content kept
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps(changed) + "\n")
    assert main(["decide", str(later), "--store", str(store), "-o", str(out)]) == 0
    assert f"event id {e2.id!r} is already remembered" in caplog.text
    assert [d.event_id for d in _decisions(out)] == ids
    from memory.store import Store

    s = Store(store, readonly=True)
    assert s.events(inst.events[0].user_id or "u1", [e2.id])[e2.id][0].visual == e2.visual
    s.close()
