"""Folder walking and the start-time rules of docs/formats.md section 1."""
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from perception.clips import ClipError, ClipFolderError, discover, start_time, time_from_name
from perception.pipeline import event_ids


def touch(path, data=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_file_name_styles():
    assert time_from_name("2026-03-02T08-15-00") == datetime(2026, 3, 2, 8, 15, 0)
    assert time_from_name("VID_20260302_081500") == datetime(2026, 3, 2, 8, 15, 0)
    assert time_from_name("holiday") is None
    assert time_from_name("2026-13-02T08-15-00") is None  # not a real date: not a timestamp


def test_discover_recursive_sidecars_audio_and_nearest_profile(tmp_path):
    touch(tmp_path / "profile.json", json.dumps({"user_id": "maya", "timezone": "Europe/Berlin"}).encode())
    touch(tmp_path / "2026-03-02T08-15-00.mp4")
    touch(tmp_path / "2026-03-02T08-15-00.json", b'{"location": "kitchen"}')
    touch(tmp_path / "2026-03-02T08-15-00.wav")
    touch(tmp_path / "day2" / "20260303_091000.MOV")
    touch(tmp_path / "other" / "profile.json", json.dumps({"user_id": "sam", "timezone": "America/New_York"}).encode())
    touch(tmp_path / "other" / "deep" / "clip.webm")
    touch(tmp_path / "notes.txt")
    clips = {c.rel: c for c in discover(tmp_path)}
    assert set(clips) == {"2026-03-02T08-15-00.mp4", "day2/20260303_091000.MOV", "other/deep/clip.webm"}
    first = clips["2026-03-02T08-15-00.mp4"]
    assert first.sidecar_path.name == "2026-03-02T08-15-00.json" and first.audio_path.suffix == ".wav"
    assert first.load_sidecar()["location"] == "kitchen"
    assert clips["day2/20260303_091000.MOV"].profile.user_id == "maya"
    assert clips["other/deep/clip.webm"].profile.user_id == "sam"  # nearest profile wins: users stay apart
    t, rule = start_time(clips["day2/20260303_091000.MOV"], None)
    assert (t.isoformat(), rule) == ("2026-03-03T09:10:00+01:00", "file name")
    t, rule = start_time(clips["other/deep/clip.webm"], "2026-03-04T17:00:00.000000Z")
    assert (t.isoformat(), rule) == ("2026-03-04T12:00:00-05:00", "container")


def test_start_time_order_of_rules(tmp_path):
    clip_path = touch(tmp_path / "2026-03-02T08-15-00.mp4")
    side = touch(tmp_path / "2026-03-02T08-15-00.json", b'{"start": "2026-03-01T07:00:00-05:00"}')
    (c,) = discover(tmp_path)
    assert start_time(c, "2020-01-01T00:00:00Z")[0].isoformat() == "2026-03-01T07:00:00-05:00"
    side.write_bytes(b'{"start": "2026-03-01T07:00:00"}')  # naive: the profile's (here the machine's) wall clock
    (c,) = discover(tmp_path)
    t, rule = start_time(c, None)
    assert rule == "sidecar" and t.tzinfo is not None and t.replace(tzinfo=None) == datetime(2026, 3, 1, 7)
    side.unlink()
    plain = touch(tmp_path / "holiday.mp4")
    os.utime(plain, (1_700_000_000, 1_700_000_000))
    by_name = {c.rel: c for c in discover(tmp_path)}
    assert start_time(by_name["2026-03-02T08-15-00.mp4"], None)[1] == "file name"
    t, rule = start_time(by_name["holiday.mp4"], None)
    assert rule == "file mtime" and t == datetime.fromtimestamp(1_700_000_000, tz=timezone.utc)
    assert clip_path.exists()


def test_bad_sidecar_fails_the_clip_with_its_name(tmp_path):
    touch(tmp_path / "a.mp4")
    touch(tmp_path / "a.json", b'{"location": "kitchen",')
    (c,) = discover(tmp_path)
    with pytest.raises(ClipError, match=r"sidecar a.json: malformed JSON"):
        c.load_sidecar()
    (tmp_path / "a.json").write_text('{"location": 5}')
    (c,) = discover(tmp_path)
    with pytest.raises(ClipError, match="'location' must be a string"):
        c.load_sidecar()


def test_bad_profile_stops_the_folder(tmp_path):
    touch(tmp_path / "a.mp4")
    touch(tmp_path / "profile.json", b"{nope")
    with pytest.raises(ClipFolderError, match="profile.json: malformed JSON"):
        discover(tmp_path)
    (tmp_path / "profile.json").write_text('{"timezone": "Mars/Olympus"}')
    with pytest.raises(ClipFolderError, match="unknown timezone 'Mars/Olympus'"):
        discover(tmp_path)
    with pytest.raises(ClipFolderError, match="not found"):
        discover(tmp_path / "missing")


def test_event_ids_are_stable_and_unique(tmp_path):
    for name in ("d1/a.mp4", "d1/a.mkv", "d2/b.mp4"):
        touch(tmp_path / name)
    ids = event_ids(discover(tmp_path))
    assert ids == {"d1/a.mkv": "d1/a.mkv", "d1/a.mp4": "d1/a.mp4", "d2/b.mp4": "d2/b"}
    touch(tmp_path / "d0" / "z.mp4")  # a new clip renumbers nothing
    assert event_ids(discover(tmp_path))["d2/b.mp4"] == "d2/b"


def test_bad_sidecar_start_names_the_file(tmp_path):
    touch(tmp_path / "2026-03-02T08-15-00.mp4")
    touch(tmp_path / "2026-03-02T08-15-00.json", b'{"start": "tomorrow morning"}')
    (c,) = discover(tmp_path)
    with pytest.raises(ClipError, match=r"2026-03-02T08-15-00.json: 'start' is not an ISO-8601 time"):
        start_time(c, None)


def test_a_clip_name_that_is_not_utf8_is_reported_and_skipped(tmp_path, cfg):
    from perception.pipeline import perceive_folder, write_outputs

    root = tmp_path / "clips"
    touch(root / "2026-03-02T08-15-00.mp4")
    touch(root / "2026-03-02T08-15-00.json", json.dumps({"narration": "The user opens the fridge.",
                                                          "transcript": "Out of milk."}).encode())
    from tests.perception.perception_media import make_clip

    make_clip(root / "2026-03-02T08-15-00.mp4", seconds=1.0)
    # A real clip whose name holds a Latin-1 byte (the file system hands Python a surrogate escape).
    bad = Path(os.fsdecode(os.path.join(os.fsencode(root), b"2026-03-02T09-00-00-caf\xe9.mp4")))
    make_clip(bad, seconds=1.0)
    bad.with_suffix(".json").write_text(json.dumps({"narration": "Coffee.", "transcript": "Hi."}))
    report = perceive_folder(root, cfg, progress=False)
    assert [e.id for e in report.events] == ["2026-03-02T08-15-00"]
    (failed,) = report.failed
    assert "not valid UTF-8" in failed.error and failed.clip == "2026-03-02T09-00-00-caf\\xe9.mp4"
    out = tmp_path / "events.jsonl"
    errors = write_outputs(report, out, root)
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == ["2026-03-02T08-15-00"]
    assert json.loads(errors.read_text(encoding="utf-8"))["errors"][0]["clip"] == failed.clip
