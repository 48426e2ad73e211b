"""Intention records through the service and the decision loop: a raise, a "no thanks" event, an
API dismissal, expiry, the brief endpoint, one user's intentions never shown to another, and
`promem decide` killed between logging a decision and recording its raise."""
import json
import os
import subprocess
import sys
import textwrap

import httpx
import pytest

from tests.serve.conftest import REPO, LiveServer, overrides

pytestmark = pytest.mark.slow

FORMED = [
    {"id": "f1", "time": "2026-03-02T08:00:00+01:00", "location": "kitchen", "visual": "The oat milk carton is empty.",
     "audio": "[user] We ran out of oat milk. I need to buy some at the store on Friday evening."},
    {"id": "f2", "time": "2026-03-02T09:00:00+01:00", "location": "hallway", "visual": "A parcel notice on the door mat.",
     "audio": "[user] I have to pick up the parcel at the post office."},
    {"id": "f0", "time": "2026-02-20T09:00:00+01:00", "location": "gym", "visual": "The running shoes have a split sole.",
     "audio": "[user] I need new running shoes."},  # formed more than the 168 h horizon before the events below
]
AT_SHOP = {"id": "x1", "time": "2026-03-06T17:30:00+01:00", "location": "grocery store",
           "visual": "Walking past the dairy shelf of a grocery store."}
DECLINE = {"id": "x2", "time": "2026-03-06T17:32:00+01:00", "location": "grocery store",
           "visual": "Standing in the checkout queue.", "audio": "[user] No thanks, I already did."}


def eager(cfg):
    """The gate fires at every moment, one evidence each: the loop's raise is what is under test."""
    cfg = cfg.model_copy(deep=True)
    cfg.reasoner.gate.use_calibrated = False
    cfg.reasoner.gate.threshold = 0.0
    cfg.reasoner.gate.max_evidence = 1
    return cfg


def seed(cfg, store, user, rows):
    """Remember events with the intention a constructor found in each (the test linker finds none)."""
    from core.formats import Event
    from memory.api import open_memory

    with open_memory(cfg, store, user) as mem:
        built = mem.constructor.extract([Event.model_validate(r) for r in rows])
        for b in built:
            b.intentions = [(b.event.text(), 0.9)]
        mem.add_built(built)


def test_intentions_through_the_service(serve_cfg, tmp_path):
    from serve.app import create_app

    cfg = eager(serve_cfg)
    seed(cfg, tmp_path, "alice", FORMED)
    seed(cfg, tmp_path, "bob", FORMED[:1])
    with LiveServer(create_app(cfg, tmp_path)) as srv:
        url = srv.url + "/v1/users/alice"
        recs = httpx.get(url + "/intentions").json()["intentions"]
        by_event = {r["evidence"][0]: r for r in recs}
        assert sorted(by_event) == ["f0", "f1", "f2"] and all(r["status"] == "open" for r in recs)
        assert by_event["f1"]["gist"] == "oat milk" and by_event["f1"]["trigger"]["window_text"] == "Friday evening"

        brief = httpx.get(url + "/brief", params={"at": AT_SHOP["time"], "location": "grocery store"}).json()
        assert brief["items"][0]["id"] == by_event["f1"]["id"] and brief["items"][0]["near"] == 1.0
        assert by_event["f0"]["id"] not in {i["id"] for i in brief["items"]}  # past the horizon
        small = httpx.get(url + "/brief", params={"at": AT_SHOP["time"], "budget": brief["items"][0]["tokens"]}).json()
        assert [i["id"] for i in small["items"]] == [by_event["f1"]["id"]] and small["omitted"] == 1

        d = httpx.post(url + "/events", json=AT_SHOP, timeout=120).json()
        assert d["assist"] is True and len(d["evidence"]) == 1 and d["evidence"][0] in ("f1", "f2")
        raised_id = by_event[d["evidence"][0]]["id"]
        other_id = by_event["f2" if d["evidence"][0] == "f1" else "f1"]["id"]
        got = {r["id"]: r for r in httpx.get(url + "/intentions").json()["intentions"]}
        assert got[raised_id]["status"] == "raised" and got[raised_id]["transitions"][-1]["event_id"] == "x1"
        assert got[by_event["f0"]["id"]]["status"] == "expired"  # the decision at x1 saw it past the horizon
        assert [r["id"] for r in httpx.get(url + "/intentions", params={"status": "raised"}).json()["intentions"]] \
            == [raised_id]

        again = httpx.post(url + "/events", json=AT_SHOP, timeout=120).json()  # a retry: answered from the log
        assert again == d
        assert len(httpx.get(url + "/intentions").json()["intentions"]) == 3
        got = {r["id"]: r for r in httpx.get(url + "/intentions").json()["intentions"]}
        assert [t["state"] for t in got[raised_id]["transitions"]] == ["open", "raised"]  # not raised twice

        httpx.post(url + "/events", json=DECLINE, timeout=120).raise_for_status()
        got = {r["id"]: r for r in httpx.get(url + "/intentions").json()["intentions"]}
        assert got[raised_id]["status"] == "dismissed"
        assert got[raised_id]["transitions"][-1] == {"state": "dismissed", "at": "2026-03-06T16:32:00+00:00",
                                                     "event_id": "x2", "source": "event"}
        assert got[other_id]["status"] in ("open", "raised")  # the assist at x1 did not raise it

        r = httpx.post(f"{url}/intentions/{other_id}/dismiss")
        assert r.status_code == 200 and r.json()["status"] == "dismissed"
        assert r.json()["transitions"][-1]["source"] == "api" and r.json()["transitions"][-1]["event_id"] is None
        assert httpx.post(f"{url}/intentions/{other_id}/dismiss").status_code == 200  # again: still dismissed
        r = httpx.post(f"{url}/intentions/{by_event['f0']['id']}/dismiss")
        assert r.status_code == 409 and "already expired" in r.json()["detail"]
        assert httpx.post(f"{url}/intentions/int-000000000000/dismiss").status_code == 404
        assert httpx.get(url + "/brief", params={"at": DECLINE["time"]}).json()["items"] == []

        # Bob has his own oat-milk intention; Alice's are neither listed nor dismissable for him.
        bob = srv.url + "/v1/users/bob"
        (mine,) = httpx.get(bob + "/intentions").json()["intentions"]
        assert mine["user_id"] == "bob" and mine["status"] == "open" and mine["id"] not in got
        assert httpx.post(f"{bob}/intentions/{other_id}/dismiss").status_code == 404
        assert httpx.get(srv.url + "/v1/users/carol/intentions").json()["intentions"] == []
        assert httpx.get(url + "/intentions", params={"status": "closed"}).status_code == 422
        assert httpx.get(url + "/brief", params={"at": "yesterday"}).status_code == 422


KILLED = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {repo!r})
    from memory.intentions import IntentionBook
    real = IntentionBook.after_decision

    def crash(self, event, decision):
        if event.id == "x1":
            os._exit(9)  # the decision is logged, its raise not yet recorded
        return real(self, event, decision)

    IntentionBook.after_decision = crash
    from cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


def test_decide_killed_between_the_decision_and_its_raise_records_it_once_on_rerun(serve_cfg, serve_gate, tmp_path,
                                                                                    monkeypatch):
    from cli.main import main
    from memory.store import Store

    seed(serve_cfg, tmp_path / "store", "u1", FORMED[:1])
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in [AT_SHOP, DECLINE]))
    extra = {**overrides(serve_gate), "PROMEM_REASONER__GATE__USE_CALIBRATED": "false",
             "PROMEM_REASONER__GATE__THRESHOLD": "0.0"}
    env = {**os.environ, **extra, "OMP_NUM_THREADS": "1"}
    script = tmp_path / "killed.py"
    script.write_text(KILLED.format(repo=str(REPO)))
    argv = ["decide", str(events), "--store", str(tmp_path / "store"), "--user", "u1", "-o", str(tmp_path / "d.jsonl")]
    died = subprocess.run([sys.executable, str(script), *argv], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert died.returncode == 9, died.stderr[-2000:]
    logged = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert [d["event_id"] for d in logged] == ["x1"] and logged[0]["evidence"] == ["f1"]
    s = Store(tmp_path / "store", readonly=True)
    assert s.intention_records("u1")[0].status == "open"  # the raise was lost with the process
    s.close()

    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    assert main(argv) == 0
    s = Store(tmp_path / "store", readonly=True)
    try:
        (rec,) = s.intention_records("u1")
        assert [(t.state, t.event_id) for t in rec.transitions] == [("open", "f1"), ("raised", "x1"), ("dismissed", "x2")]
    finally:
        s.close()
    assert [json.loads(line)["event_id"] for line in (tmp_path / "d.jsonl").read_text().splitlines()] == ["x1", "x2"]


# A day after x1, past the cooldown; it names what f1 is about, so that the eager gate rests on f1
# rather than on the shop visit x1 before it (which of the two a tiny test gate ranks first is noise).
LATER = {"id": "x3", "time": "2026-03-07T18:00:00+01:00", "location": "grocery store",
         "visual": "Oat milk cartons on the shelf; the user needs to buy oat milk."}


def test_a_dismissed_intention_stays_silent_at_later_opportunities(serve_cfg, tmp_path):
    """The guard reads the records: an intention dismissed through the API before it was ever raised,
    or by a "no thanks" after its raise, is not raised again, also after the cooldown."""
    from serve.app import create_app

    cfg = eager(serve_cfg)
    for user in ("alice", "carol", "bob"):
        seed(cfg, tmp_path, user, FORMED[:1])
    with LiveServer(create_app(cfg, tmp_path)) as srv:
        alice, bob = srv.url + "/v1/users/alice", srv.url + "/v1/users/bob"
        # Alice at the shop, Carol a day later: each the first moment after f1, so f1 is what the
        # eager gate rests on.
        for user, event in (("alice", AT_SHOP), ("carol", LATER)):
            url = srv.url + f"/v1/users/{user}"
            (rec,) = httpx.get(url + "/intentions").json()["intentions"]
            assert httpx.post(f"{url}/intentions/{rec['id']}/dismiss").status_code == 200
            d = httpx.post(url + "/events", json=event, timeout=120).json()
            assert d["assist"] is False and f"intention {rec['id']} from f1 is dismissed" in d["guard"], (user, d)
            (rec,) = httpx.get(url + "/intentions").json()["intentions"]
            assert [t["state"] for t in rec["transitions"]] == ["open", "dismissed"]  # never raised

        # Bob: raised at x1, declined at x2, and a day later still silent, for the record's reason.
        assert httpx.post(bob + "/events", json=AT_SHOP, timeout=120).json()["evidence"] == ["f1"]
        httpx.post(bob + "/events", json=DECLINE, timeout=120).raise_for_status()
        d = httpx.post(bob + "/events", json=LATER, timeout=120).json()
        assert d["assist"] is False and "is dismissed (its record)" in d["guard"]


def test_context_trigger_skips_memory_and_reasoner_at_an_empty_moment(serve_cfg, tmp_path):
    """With memory.trigger.enabled the service answers a moment that says too little with silence and
    the trigger's reason, and still decides at a moment that resembles an open intention."""
    from serve.app import create_app

    cfg = eager(serve_cfg)
    cfg.memory.trigger.enabled = True
    seed(cfg, tmp_path, "alice", FORMED[:1])
    small = {"id": "s1", "time": "2026-03-06T17:00:00+01:00", "visual": "A door."}
    with LiveServer(create_app(cfg, tmp_path)) as srv:
        url = srv.url + "/v1/users/alice"
        d = httpx.post(url + "/events", json=small, timeout=120).json()
        assert d["assist"] is False and d["retrieved"] == [] and "content word" in d["trigger"]
        d = httpx.post(url + "/events", json=AT_SHOP, timeout=120).json()
        assert "trigger" not in d and d["assist"] is True and d["evidence"] == ["f1"]
