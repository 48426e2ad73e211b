"""User ids name folders and files: two ids never share one, and an id from input data never leads
outside the store (service sessions and the CLI)."""
import json

import pytest

from core.userid import BadUserId
from tests.serve.conftest import REPO
from tests.test_userid import legacy_collision

pytestmark = pytest.mark.slow
CFG = str(REPO / "configs" / "cpu.yaml")
CANDLES = {"id": "e1", "time": "2026-09-17T20:30:00-07:00", "location": "kitchen",
           "visual": "An empty birthday-candle box in the junk drawer.", "audio": "[user] We used the last ones."}
SHOP = {"id": "e2", "time": "2026-09-18T17:30:00-07:00", "location": "Grand Ave",
        "visual": "Walking past a party-supply shop with balloons in the window."}


def test_ids_colliding_under_the_old_folder_scheme_keep_separate_decisions_profiles_and_guards(serve_cfg, tmp_path):
    from core.formats import Event, Profile
    from reasoner.api import build_reasoner
    from serve.sessions import Sessions

    a, b = legacy_collision()
    sessions = Sessions(serve_cfg, tmp_path, reasoner=build_reasoner(serve_cfg))
    sa, sb = sessions.get(a), sessions.get(b)
    assert sa.dir != sb.dir
    sa.set_profile(Profile(user_id=a, persona="A's persona"))
    sb.set_profile(Profile(user_id=b, persona="B's persona"))
    da = sa.ingest([Event(**CANDLES)])["e1"]
    # b sends an event with the same id: b's own decision, never a's (which quotes a's memory)
    db = sb.ingest([Event(id="e1", time="2026-09-17T21:00:00-07:00", visual="B ties a shoelace.")])["e1"]
    assert db["retrieved"] == [] and da is not db
    assert json.loads((sa.dir / "profile.json").read_text())["persona"] == "A's persona"
    assert json.loads((sb.dir / "profile.json").read_text())["persona"] == "B's persona"
    assert [json.loads(x)["event_id"] for x in (sb.dir / "decisions.jsonl").read_text().splitlines()] == ["e1"]
    assert sa.loop.guard.path != sb.loop.guard.path
    sessions.close()


def test_sessions_refuse_ids_that_could_name_a_path(serve_cfg, tmp_path):
    from reasoner.api import build_reasoner
    from serve.sessions import Sessions

    sessions = Sessions(serve_cfg, tmp_path / "store", reasoner=build_reasoner(serve_cfg))
    with pytest.raises(BadUserId):
        sessions.get("../../evil")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_decide_rejects_a_user_id_from_profile_json_that_leaves_the_store(cli_env, tmp_path, capsys):
    from cli.main import main

    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(CANDLES) + "\n" + json.dumps(SHOP) + "\n")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"user_id": "x/../../evil", "persona": ""}))
    store = tmp_path / "in" / "store"
    rc = main(["decide", str(events), "--store", str(store), "-o", str(tmp_path / "d.jsonl"), "--profile", str(profile),
               "-c", CFG])
    err = capsys.readouterr().err
    assert rc == 2 and "'user_id' of" in err and "x/../../evil" in err and "--user" in err
    assert not (tmp_path / "d.jsonl").exists() and not (tmp_path / "evil.json").exists()
    rc = main(["decide", str(events), "--store", str(store), "-o", str(tmp_path / "d.jsonl"), "--user", "../u",
               "-c", CFG])
    assert rc == 2 and "--user" in capsys.readouterr().err


def test_remember_skips_an_event_whose_user_id_is_a_path(cli_env, tmp_path, capsys):
    from cli.main import main

    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(dict(CANDLES, user_id="ok1")) + "\n" + json.dumps(dict(SHOP, user_id="../../evil")) + "\n")
    store = tmp_path / "store"
    rc = main(["remember", str(events), "--store", str(store), "-c", CFG])
    got = capsys.readouterr()
    assert rc == 1 and f"{events}:2" in got.err and "'user_id'" in got.err and "../../evil" in got.err
    assert "ok1: 1 new" in got.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl", "store"]
    assert main(["recall", "--store", str(store), "--user", "../x", "--event", str(events), "-c", CFG]) == 2


def test_a_store_with_legacy_user_folders_keeps_each_users_decisions_and_memory(serve_cfg, tmp_path):
    from core.formats import Event
    from core.userid import legacy_user_dir_name, user_dir_name
    from reasoner.api import build_reasoner
    from serve.sessions import Sessions

    reasoner = build_reasoner(serve_cfg)
    sessions = Sessions(serve_cfg, tmp_path, reasoner=reasoner)
    first = sessions.get("maya").ingest([Event(**CANDLES), Event(**SHOP)])
    sessions.close()
    for part in ("serve", "index"):  # lay the folders out as a store written with the old names
        (tmp_path / part / user_dir_name("maya")).rename(tmp_path / part / legacy_user_dir_name("maya"))
    sessions = Sessions(serve_cfg, tmp_path, reasoner=reasoner)
    s = sessions.get("maya")
    assert s.dir.name == user_dir_name("maya") and not (tmp_path / "serve" / legacy_user_dir_name("maya")).exists()
    assert s.ingest([Event(**SHOP)])["e2"] == first["e2"]  # answered from the moved decision log
    c = s.memory.check()
    assert c["events"] == 2 and c["content_index"] == c["facts"] and c["cue_index"] == c["event_cues"]
    sessions.close()
