"""The service over real HTTP, where input could once lose or double data: an event id sent again
with other content (409, nothing ingested, one decision row per id), time phrases past the
calendar, a second writer on the same store, and a crash between the guard and the decision log."""
import json
import subprocess
import sys

import httpx
import pytest

from tests.serve.conftest import REPO

pytestmark = pytest.mark.slow


def rows(store, user):
    from memory.api import user_dir_name

    path = store / "serve" / user_dir_name(user) / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_id_sent_again_with_other_content_is_409_and_nothing_is_ingested(live):
    srv, store = live
    url = srv.url + "/v1/users/dana/events"
    a = {"id": "a1", "time": "2026-09-17T08:00:00Z", "visual": "Packing a suitcase for Lisbon."}
    first = httpx.post(url, json=a, timeout=60)
    assert first.status_code == 200
    assert httpx.post(url, json=dict(a, user_id="dana"), timeout=60).json() == first.json()  # the same event again
    changed = dict(a, visual="Unpacking the suitcase.")
    r = httpx.post(url, json=changed, timeout=60)
    assert r.status_code == 409 and "'a1'" in r.json()["detail"] and "other content" in r.json()["detail"]
    b = {"id": "b1", "time": "2026-09-17T09:00:00Z", "visual": "Booking a taxi."}
    r = httpx.post(url, json=[b, changed], timeout=60)  # one clash refuses the whole request
    assert r.status_code == 409
    r = httpx.post(url, json=[b, dict(b, audio="Different.")], timeout=60)  # a clash within one request
    assert r.status_code == 409 and "'b1'" in r.json()["detail"]
    assert [row["event_id"] for row in rows(store, "dana")] == ["a1"]
    rec = httpx.get(srv.url + "/v1/users/dana/recall", params={"event_id": "a1"}).json()
    assert rec["event_id"] == "a1"
    session = srv.app.state.sessions.get("dana")
    assert session.memory.store.events("dana", ["a1"])["a1"][0].visual == a["visual"]


def test_time_phrases_past_the_calendar_are_decided_once_and_remembered(live):
    srv, store = live
    url = srv.url + "/v1/users/fay/events"
    evs = [{"id": "w", "time": "2026-09-17T08:00:00Z", "audio": "Let's meet again in 500000 weeks."},
           {"id": "d", "time": "2026-09-17T09:00:00Z", "audio": "See you in 99999999999 days."},
           {"id": "t", "time": "9999-12-31T23:00:00+00:00", "audio": "Let's talk tomorrow at 9."}]
    r = httpx.post(url, json=evs, timeout=60)
    assert r.status_code == 200, r.text
    assert httpx.post(url, json=evs[2], timeout=60).json() == r.json()[2]  # a client retry
    assert [row["event_id"] for row in rows(store, "fay")] == ["w", "d", "t"]
    assert srv.app.state.sessions.get("fay").memory.check()["events"] == 3


def test_a_second_service_on_the_same_store_is_refused(live):
    srv, store = live
    # Another process wants to write the store the running service holds.
    probe = ("import sys\nfrom memory.store import Store\ntry:\n    Store(sys.argv[1])\n"
             "except ValueError as exc:\n    print(exc)\n    sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(store)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3 and f"store {store} is in use by another writer" in done.stdout


def test_a_crash_between_the_guard_file_and_the_decision_log_is_completed_on_reopen(serve_cfg, tmp_path,
                                                                                   monkeypatch):
    import reasoner.guard
    import serve.sessions
    from core.formats import Event
    from reasoner.api import build_reasoner
    from serve.sessions import Sessions

    cfg = serve_cfg.model_copy(deep=True)
    cfg.reasoner.gate.use_calibrated, cfg.reasoner.gate.threshold = False, 0.0  # every moment assists
    cfg.reasoner.gate.max_evidence = 1
    gate = build_reasoner(cfg)
    formed = Event(id="e1", time="2026-09-17T08:00:00Z", visual="I must not forget my passport for the flight.")
    now = Event(id="e2", time="2026-09-17T18:00:00Z", visual="At the airport check-in desk, opening the bag.")

    clean = Sessions(cfg, tmp_path / "clean", reasoner=gate)
    want = clean.get("gil").ingest([formed, now])
    clean.close()
    assert want["e2"]["assist"] is True

    sessions = Sessions(cfg, tmp_path / "crashed", reasoner=gate)
    sessions.get("gil").ingest([formed])

    def die(path, row):  # the process dies after the guard file was written, before the decision log
        raise SystemExit("killed")

    for module in (reasoner.guard, serve.sessions):
        monkeypatch.setattr(module, "append_jsonl", die, raising=False)
    with pytest.raises(SystemExit):
        sessions.get("gil").ingest([now])
    monkeypatch.undo()
    sessions.close()

    again = Sessions(cfg, tmp_path / "crashed", reasoner=gate)
    got = again.get("gil").ingest([now])["e2"]
    again.close()
    assert (got["assist"], got["evidence"], got["message"]) == (want["e2"]["assist"], want["e2"]["evidence"],
                                                                want["e2"]["message"])
    assert [row["event_id"] for row in rows(tmp_path / "crashed", "gil")] == ["e1", "e2"]


def test_a_retry_after_remembering_failed_is_answered_from_the_log(serve_cfg, tmp_path, monkeypatch):
    from core.formats import Event
    from reasoner.api import build_reasoner
    from serve.sessions import Sessions

    sessions = Sessions(serve_cfg, tmp_path, reasoner=build_reasoner(serve_cfg))
    s = sessions.get("hal")
    ev = Event(id="e1", time="2026-09-17T08:00:00Z", visual="Packing a suitcase.")

    def fail(event):
        raise OSError("disk full")

    monkeypatch.setattr(s.memory, "add", fail)
    with pytest.raises(OSError):
        s.ingest([ev])
    monkeypatch.undo()
    first = [json.loads(line) for line in s.log_path.read_text().splitlines()]
    assert s.ingest([ev])["e1"] == first[0]  # the client's retry
    assert [row["event_id"] for row in rows(tmp_path, "hal")] == ["e1"] and s.memory.check()["events"] == 1
    sessions.close()
