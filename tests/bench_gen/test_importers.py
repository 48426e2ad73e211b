"""Importers of the public data: counts, validity, and clear messages on bad entries."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from bench.importers import ImportError_, cab, data_dir, locomo_plus, missing_data
from core.timeutil import parse_time

# The public files are not in the repository: $PROMEM_DATA (or ./data/external) points at them.
MISSING = missing_data(["locomo_plus.json", "locomo10.json", "cab_test.json", "cab_train.json"])
needs_data = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def _validate(instances, path: Path):
    from bench.validate import validate_file

    path.write_text("".join(json.dumps(i.dump(), ensure_ascii=False) + "\n" for i in instances), encoding="utf-8")
    return validate_file(path)


@pytest.fixture(scope="module")
def locomo():
    if MISSING:
        pytest.skip(MISSING)
    return locomo_plus.load()


@needs_data
def test_locomo_plus_401_valid_positive_timelines(locomo, tmp_path):
    assert locomo.skipped == []
    assert len(locomo.instances) == 401
    good, violations = _validate(locomo.instances, tmp_path / "lp.jsonl")
    assert violations == [] and len(good) == 401
    pairs = json.loads((data_dir() / "locomo_plus.json").read_text())
    for inst, pair in zip(locomo.instances[:60], pairs):
        assert inst.variant == "positive" and len(inst.intentions) == 1
        it = inst.intentions[0]
        cue, trigger = inst.event(it.formation), inst.events[-1]
        assert trigger.id == inst.decision_event
        assert pair["trigger_query"].split(":", 1)[1].strip() in trigger.audio
        assert it.reference in cue.audio
        # the cue sits exactly time_gap before the trigger
        assert parse_time(trigger.time) - parse_time(cue.time) == locomo_plus.parse_gap(pair["time_gap"])
        assert len(inst.events) > 50  # the whole LoCoMo conversation is there
        assert it.keywords and all(w.lower() in cue.audio.lower() for w in it.keywords[0])
    assert {i.category for i in locomo.instances} == {"daily_life", "health", "work", "social"}


def test_time_gap_and_session_time_parsing():
    assert locomo_plus.parse_gap("two months later") == timedelta(days=60)
    assert locomo_plus.parse_gap("a couple of months later") == timedelta(days=60)
    assert locomo_plus.parse_gap("about one week later") == timedelta(days=7)
    assert locomo_plus.parse_gap("around one week after the birth") == timedelta(days=7)
    assert locomo_plus.parse_gap("a year later") == timedelta(days=365)
    assert locomo_plus.parse_gap("several weeks later") == timedelta(days=21)
    with pytest.raises(ValueError, match="soon"):
        locomo_plus.parse_gap("soon")
    t = locomo_plus.parse_locomo_time("1:56 pm on 8 May, 2023")
    assert (t.hour, t.minute, t.day, t.month, t.year, t.utcoffset()) == (13, 56, 8, 5, 2023, timedelta(0))
    assert locomo_plus.dialogue_lines("A: hi\\nB: yo") == [("A", "hi"), ("B", "yo")]


@needs_data
def test_cab_test_390_and_train_valid(tmp_path):
    test = cab.load("test")
    assert len(test.instances) == 390 and test.dropped == 10 and test.skipped == []
    good, violations = _validate(test.instances, tmp_path / "cab.jsonl")
    assert violations == [] and len(good) == 390
    pos = [i for i in test.instances if i.variant == "positive"]
    assert len(pos) == 201 and len(test.instances) - len(pos) == 189
    for i in pos:
        (it,) = i.intentions
        assert it.formation == i.decision_event == "e1" and it.keywords == [] and it.reference.strip()
    assert all(i.intentions == [] for i in test.instances if i.variant == "no_formation")
    train = cab.load("train")
    assert len(train.instances) == 586 and train.skipped == []
    assert not {i.id for i in train.instances} & {i.id for i in test.instances}


def test_bad_entries_are_named_and_the_rest_goes_on(tmp_path):
    good_ctx = {"Category": "Cooking", "Vision": "Chopping onions.", "Audio": "", "Personas": [""],
                "Proactive index": "true", "Response": "Want a timer for the rice?"}
    data = {"ok-1": good_ctx, "bad-1": {"Vision": "x"}, "bad-2": dict(good_ctx, Category="Space"),
            "mid-1": dict(good_ctx, **{"Proactive index": "medium"}), "no-1": dict(good_ctx, **{"Proactive index": "false"})}
    (tmp_path / "cab_test.json").write_text(json.dumps(data))
    r = cab.load("test", tmp_path)
    assert [i.id for i in r.instances] == ["cab-test-ok-1-positive", "cab-test-no-1-no_formation"]
    assert r.dropped == 1 and len(r.skipped) == 2
    assert "'bad-1'" in r.skipped[0] and "missing key" in r.skipped[0]
    assert "'bad-2'" in r.skipped[1] and "Space" in r.skipped[1]
    (tmp_path / "cab_train.json").write_text("{not json")
    with pytest.raises(ImportError_, match=r"cab_train\.json: malformed JSON"):
        cab.load("train", tmp_path)
    with pytest.raises(ImportError_, match="not found") as exc:
        locomo_plus.load(tmp_path)
    said = str(exc.value)  # names both files, where to get them and how to point at them
    assert "locomo_plus.json, locomo10.json" in said and "github.com/xjtuleeyf/Locomo-Plus" in said
    assert "--src DIR" in said and "PROMEM_DATA" in said and str(tmp_path) in said


def test_data_folder_is_src_then_env_then_default(tmp_path, monkeypatch):
    from core.config import load_config

    monkeypatch.delenv("PROMEM_DATA", raising=False)
    assert data_dir() == Path("data/external")
    monkeypatch.setenv("PROMEM_DATA", str(tmp_path))
    assert data_dir() == tmp_path and data_dir(tmp_path / "x") == tmp_path / "x"
    assert load_config().source  # PROMEM_DATA is not read as a config override
    monkeypatch.chdir(tmp_path)  # the default is relative to the current directory
    monkeypatch.delenv("PROMEM_DATA")
    msg = missing_data(["cab_test.json"])
    assert "cab_test.json" in msg and "github.com/bf-yang/ContextAgent" in msg and "data/external" in msg
    (tmp_path / "data" / "external").mkdir(parents=True)
    (tmp_path / "data" / "external" / "cab_test.json").write_text("{}")
    assert missing_data(["cab_test.json"]) is None


def test_locomo_bad_pair_is_skipped_with_its_index(tmp_path):
    conv = {"sample_id": "c1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "9:00 am on 2 March, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Hey Ann, how was the trip?"}]}}
    pairs = [{"relation_type": "goal", "cue_dialogue": "A: I want to run a marathon next spring.\nB: Go for it!",
              "trigger_query": "A: Bought new shoes today.", "time_gap": "two weeks later"},
             {"relation_type": "goal", "cue_dialogue": "A: x", "trigger_query": "A: y", "time_gap": "eventually"},
             {"relation_type": "goal", "cue_dialogue": "A: x"}]
    (tmp_path / "locomo10.json").write_text(json.dumps([conv]))
    (tmp_path / "locomo_plus.json").write_text(json.dumps(pairs))
    r = locomo_plus.load(tmp_path)
    assert len(r.instances) == 1 and len(r.skipped) == 2
    assert "pair 1" in r.skipped[0] and "eventually" in r.skipped[0]
    assert "pair 2" in r.skipped[1] and "trigger_query" in r.skipped[1]
    inst = r.instances[0]
    cue = inst.event(inst.intentions[0].formation)
    assert cue.audio == "[Ann] I want to run a marathon next spring. [Bo] Go for it!"
    assert inst.events[-1].audio == "[Ann] Bought new shoes today."
    assert [e.id for e in inst.events] == ["e1", "e2", "e3"]  # the cue comes before the session (14 days)
    assert inst.events[0].id == cue.id


@needs_data
def test_cli_import_cab(tmp_path):
    out = tmp_path / "cab.jsonl"
    r = subprocess.run([sys.executable, "-m", "cli.main", "bench", "import", "cab", "--split", "test", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote 390 instances" in r.stdout and "10 dropped" in r.stdout
    assert sum(1 for _ in out.open()) == 390
    r = subprocess.run([sys.executable, "-m", "cli.main", "bench", "import", "cab", "--src", str(tmp_path),
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 1 and "not found" in r.stderr and "cab_test.json" in r.stderr and "--src" in r.stderr
