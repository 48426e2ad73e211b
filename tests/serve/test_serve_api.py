"""The service over real HTTP: uvicorn on loopback, the CPU profile's gate reasoner, real memory."""
import httpx
import pytest

from tests.support.data import pick

pytestmark = pytest.mark.slow

SECRET = "Alice notices the last oat milk carton is empty; she mutters she must buy oat milk."


def events_of(inst, user=None, upto=None):
    out = []
    for e in inst.events:
        d = e.dump()
        d = {k: v for k, v in d.items() if v is not None}
        if user:
            d["user_id"] = user
        out.append(d)
        if e.id == upto:
            break
    return out


def test_healthz(live):
    srv, _ = live
    r = httpx.get(srv.url + "/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["reasoner"] == "gate"


def test_events_in_decisions_out_in_time_order_then_remembered(live, sample_instances):
    srv, _ = live
    inst = pick(sample_instances.values(), "positive", 0)
    evs = events_of(inst)
    past, now = evs[:-1], evs[-1]
    r = httpx.post(srv.url + "/v1/users/alice/events", json=past[::-1], timeout=120)  # sent newest first
    assert r.status_code == 200, r.text
    decisions = r.json()
    assert [d["event_id"] for d in decisions] == [e["id"] for e in past[::-1]]  # answered in request order
    by_id = {d["event_id"]: d for d in decisions}
    assert by_id["e01"]["retrieved"] == []  # decided in time order: nothing was before the first event
    for d in decisions:  # each decided from memory of strictly earlier events only
        assert set(d.keys()) >= {"event_id", "assist", "message", "evidence", "retrieved", "timing_ms"}
        assert all(rid < d["event_id"] for rid in d["retrieved"]), d
        assert "retrieve" in d["timing_ms"] and "reason" in d["timing_ms"]
    r = httpx.post(srv.url + "/v1/users/alice/events", json=now, timeout=60)  # one event -> one decision
    assert r.status_code == 200
    d = r.json()
    assert d["event_id"] == now["id"] and len(d["retrieved"]) > 0
    assert d["assist"] is (d["message"] is not None)
    rec = httpx.get(srv.url + "/v1/users/alice/recall", params={"event_id": now["id"]}).json()
    assert [x["event"]["id"] for x in rec["recalled"]] == d["retrieved"]  # the same retrieval, now remembered


def test_a_retried_event_gets_the_same_decision_and_is_stored_once(live, sample_instances):
    srv, _ = live
    evs = events_of(pick(sample_instances.values(), "negative", 1))[:3]
    first = httpx.post(srv.url + "/v1/users/carol/events", json=evs, timeout=60).json()
    again = httpx.post(srv.url + "/v1/users/carol/events", json=evs[1], timeout=60).json()
    assert again == first[1]
    session = srv.app.state.sessions.get("carol")
    assert session.memory.check()["events"] == 3
    assert len(session.log_path.read_text().splitlines()) == 3


def test_one_users_memory_is_never_visible_to_another(live, sample_instances):
    srv, _ = live
    alice = [{"id": "a1", "time": "2026-09-17T08:00:00-07:00", "location": "kitchen", "visual": SECRET, "audio": ""}]
    assert httpx.post(srv.url + "/v1/users/alice2/events", json=alice, timeout=60).status_code == 200
    # Bob is at the grocery store, the very moment Alice's intention waits for.
    bob = [{"id": "b1", "time": "2026-09-17T09:00:00-07:00", "location": "street", "visual": "Reading a bus timetable."},
           {"id": "b2", "time": "2026-09-18T18:00:00-07:00", "location": "grocery store",
            "visual": "Walking past the dairy shelf with the oat milk cartons."}]
    decisions = httpx.post(srv.url + "/v1/users/bob/events", json=bob, timeout=60).json()
    assert decisions[1]["retrieved"] == ["b1"]
    assert "oat" not in (decisions[1]["message"] or "").lower()
    rec = httpx.get(srv.url + "/v1/users/bob/recall", params={"event_id": "b2", "k": 50}).json()
    assert [x["event"]["id"] for x in rec["recalled"]] == ["b1"]
    assert "a1" not in str(rec) and "oat milk carton" not in str(rec)
    r = httpx.get(srv.url + "/v1/users/bob/recall", params={"event_id": "a1"})
    assert r.status_code == 404 and "not in the memory of user 'bob'" in r.json()["detail"]
    # Bob may reuse Alice's event id: ids are per user, Alice's event is untouched.
    same_id = {"id": "a1", "time": "2026-09-18T19:00:00-07:00", "visual": "Bob locks his bike."}
    assert httpx.post(srv.url + "/v1/users/bob/events", json=same_id, timeout=60).status_code == 200
    mine = httpx.get(srv.url + "/v1/users/alice2/recall", params={"event_id": "a1"}).json()
    assert mine["recalled"] == []
    assert srv.app.state.sessions.get("alice2").memory.store.events("alice2", ["a1"])["a1"].event.visual == SECRET


@pytest.mark.parametrize("body, status, words", [
    ([{"id": "x1", "time": "2026-09-17T08:00:00Z", "visual": "ok"}, {"id": "x2", "visual": "no time"}],
     422, ["event 1", "x2", "missing key 'time'"]),
    ({"time": "2026-09-17T08:00:00Z", "visual": "no id"}, 422, ["missing key 'id'"]),
    ({"id": "x3", "time": "yesterday-ish", "visual": "bad time"}, 422, ["x3", "'time'"]),
    ({"id": "x4", "time": "2026-09-17T08:00:00Z"}, 422, ["x4", "'visual' / 'audio'"]),
    ({"id": "x5", "time": "2026-09-17T08:00:00Z", "visual": "v", "user_id": "mallory"}, 422, ["'user_id'", "mallory"]),
    ([], 422, ["empty list"]),
    ("just a string", 422, ["expected a JSON object"]),
])
def test_malformed_events_are_422_naming_the_key_and_nothing_is_ingested(live, body, status, words):
    srv, _ = live
    r = httpx.post(srv.url + "/v1/users/dave/events", json=body, timeout=60)
    assert r.status_code == status
    for w in words:
        assert w in r.json()["detail"], (w, r.json())
    assert httpx.get(srv.url + "/v1/users/dave/recall", params={"event_id": "x1"}).status_code == 404


def test_bad_json_and_bad_user_ids_are_422(live):
    srv, _ = live
    r = httpx.post(srv.url + "/v1/users/dave/events", content=b'{"id": "x", "time": ', timeout=60,
                   headers={"content-type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in r.json()["detail"]
    r = httpx.post(srv.url + "/v1/users/..%2F..%2Fetc/events", json={"id": "x", "time": "2026-09-17T08:00:00Z",
                                                                      "visual": "v"})
    assert r.status_code in (404, 422)
    r = httpx.post(srv.url + "/v1/users/-dash/events", json={"id": "x", "time": "2026-09-17T08:00:00Z", "visual": "v"})
    assert r.status_code == 422 and "'user_id'" in r.json()["detail"]
    assert httpx.get(srv.url + "/v1/users/dave/recall").status_code == 422  # event_id is required


def test_profile_sets_the_persona_the_reasoner_sees(live):
    srv, _ = live
    r = httpx.put(srv.url + "/v1/users/erin/profile", json={"persona": "Erin, 41, allergic to nuts."})
    assert r.status_code == 200 and r.json()["user_id"] == "erin"
    assert srv.app.state.sessions.get("erin").loop.persona == "Erin, 41, allergic to nuts."
    assert httpx.put(srv.url + "/v1/users/erin/profile", json=["no"]).status_code == 422


def test_least_recently_used_memories_close_and_reopen_with_nothing_lost(serve_cfg, tmp_path):
    from core.formats import Event
    from reasoner.api import build_reasoner
    from serve.sessions import Sessions

    sessions = Sessions(serve_cfg, tmp_path, reasoner=build_reasoner(serve_cfg), max_open=2)
    ev = Event(id="e1", time="2026-09-17T08:00:00Z", visual="Packing a suitcase.")
    first = sessions.get("u1").ingest([ev])["e1"]
    sessions.get("u2")
    sessions.get("u3")  # u1 is closed now
    assert len(sessions) == 2 and "u1" not in sessions._open
    again = sessions.get("u1")
    assert again.ingest([ev])["e1"] == first and again.memory.check()["events"] == 1
    sessions.close()



def test_with_a_token_set_every_v1_request_needs_it(serve_cfg, tmp_path, monkeypatch):
    from serve.app import create_app
    from tests.serve.conftest import LiveServer

    monkeypatch.setenv(serve_cfg.serve.token_env, "s3cret")
    with LiveServer(create_app(serve_cfg, tmp_path)) as srv:
        ev = {"id": "e1", "time": "2026-09-17T08:00:00Z", "visual": "v"}
        assert httpx.get(srv.url + "/healthz").status_code == 200  # liveness stays open
        r = httpx.post(srv.url + "/v1/users/u1/events", json=ev, timeout=60)
        assert r.status_code == 401 and serve_cfg.serve.token_env in r.json()["detail"]
        r = httpx.get(srv.url + "/v1/users/u1/recall", params={"event_id": "e1"}, headers={"Authorization": "Bearer no"})
        assert r.status_code == 401
        r = httpx.post(srv.url + "/v1/users/u1/events", json=ev, timeout=60, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200 and r.json()["event_id"] == "e1"


def test_concurrent_users_with_one_open_memory_all_get_decisions(serve_cfg, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from serve.app import create_app
    from tests.serve.conftest import LiveServer

    cfg = serve_cfg.model_copy(deep=True)
    cfg.serve.max_open_users = 1  # every request evicts another user's memory
    with LiveServer(create_app(cfg, tmp_path)) as srv:
        def post(i):
            user, n = f"user{i % 3}", i // 3
            ev = {"id": f"e{n}", "time": f"2026-09-17T0{n}:00:00Z", "visual": f"{user} event {n}"}
            return user, httpx.post(f"{srv.url}/v1/users/{user}/events", json=ev, timeout=120)

        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(post, range(9)))
        assert all(r.status_code == 200 for _, r in results), [r.text for _, r in results]
        for u in ("user0", "user1", "user2"):
            rec = httpx.get(f"{srv.url}/v1/users/{u}/recall", params={"event_id": "e2"}).json()
            texts = [x["event"]["visual"] for x in rec["recalled"]]
            assert sorted(texts) == [f"{u} event 0", f"{u} event 1"]  # its own past, nobody else's
