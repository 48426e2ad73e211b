"""`promem perceive` end to end on a real clip folder: events, errors file, exit codes, cache, kill -9 + resume."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.main import main
from tests.perception.perception_media import GREEN, RED, make_clip, speech_wav, truncate

REPO = Path(__file__).resolve().parents[2]


def write_json(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "clips"
    d.mkdir()
    write_json(d / "profile.json", {"user_id": "maya", "timezone": "Europe/Berlin", "persona": "Maya, 29."})
    make_clip(d / "2026-03-02T08-15-00.mp4", seconds=2.5, speech="We are out of milk again. I have to buy some on the way home.")
    write_json(d / "2026-03-02T08-15-00.json", {"location": "kitchen", "narration": "The user opens the fridge."})
    make_clip(d / "2026-03-02T12-00-00.mov", seconds=1.0, colors=(GREEN,))
    write_json(d / "2026-03-02T12-00-00.json", {"narration": "The user eats lunch.", "transcript": "[friend] Enjoy!"})
    day2 = d / "2026-03-03"
    make_clip(day2 / "20260303_074500.mkv", seconds=1.0, colors=(RED, GREEN))
    speech_wav("Call the dentist tomorrow.", day2 / "20260303_074500.wav")
    write_json(day2 / "20260303_074500.json", {"location": "street"})
    return d


def add_bad_clips(d):
    good = d / "2026-03-02T08-15-00.mp4"
    truncate(good, d / "2026-03-02T09-00-00.mp4", keep=0.4)
    (d / "2026-03-02T10-00-00.webm").write_bytes(b"")
    (d / "2026-03-02T11-00-00.mp4").write_bytes(b"\x00\x01garbage" * 300)
    make_clip(d / "2026-03-02T13-00-00.mp4", seconds=1.0)  # no narration, no audio: nothing to describe
    make_clip(d / "2026-03-02T14-00-00.mp4", seconds=1.0)
    (d / "2026-03-02T14-00-00.json").write_text('{"narration": "unterminated', encoding="utf-8")


def read_events(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def run_cli(*argv):
    return main(["perceive", *map(str, argv), "--no-progress"])


@pytest.mark.slow
def test_folder_to_events_with_failures_then_cached_rerun(tmp_path, folder, capsys):
    add_bad_clips(folder)
    out = tmp_path / "out" / "events.jsonl"
    cache = tmp_path / "cache"
    assert run_cli(folder, "-o", out, "--cache-dir", cache, "--workers", "2") == 3
    events = read_events(out)
    assert [e["id"] for e in events] == ["2026-03-02T08-15-00", "2026-03-02T12-00-00", "2026-03-03/20260303_074500"]
    first, lunch, street = events
    assert first["time"] == "2026-03-02T08:15:00+01:00" and "2026-03-02T08:15:02+01:00" <= first["end"] <= "2026-03-02T08:15:06+01:00"
    assert first["user_id"] == "maya" and first["location"] == "kitchen"
    assert first["visual"] == "The user opens the fridge."
    assert "out of milk" in first["audio"].lower()
    assert first["source"] == {"clip": "2026-03-02T08-15-00.mp4"}
    assert first["perception"] == {"captioner": "narration", "asr": "faster-whisper:tiny.en"}
    assert lunch["audio"] == "[friend] Enjoy!" and lunch["perception"]["asr"] == "sidecar"
    assert "dentist" in street["audio"].lower() and "visual" not in street  # speech from the same-stem .wav

    errors = json.loads((out.parent / "events.jsonl.errors.json").read_text())
    assert (errors["clips"], errors["ok"], errors["failed"]) == (8, 3, 5)
    reasons = {e["clip"]: e["reason"] for e in errors["errors"]}
    assert "cannot decode" in reasons["2026-03-02T09-00-00.mp4"]
    assert "empty file" in reasons["2026-03-02T10-00-00.webm"]
    assert "cannot decode" in reasons["2026-03-02T11-00-00.mp4"]
    assert "nothing to describe" in reasons["2026-03-02T13-00-00.mp4"]
    assert "sidecar 2026-03-02T14-00-00.json: malformed JSON" in reasons["2026-03-02T14-00-00.mp4"]
    err = capsys.readouterr().err
    assert "3 ok (0 from cache, 3 processed), 5 failed" in err and "FAILED 2026-03-02T10-00-00.webm: empty file" in err

    # Fixing the inputs and rerunning redoes only the fixed clips; the rest come from the cache.
    before = out.read_bytes()
    for name in ("2026-03-02T09-00-00.mp4", "2026-03-02T10-00-00.webm", "2026-03-02T11-00-00.mp4",
                 "2026-03-02T13-00-00.mp4", "2026-03-02T14-00-00.mp4", "2026-03-02T14-00-00.json"):
        (folder / name).unlink()
    assert run_cli(folder, "-o", out, "--cache-dir", cache) == 0
    assert "3 ok (3 from cache, 0 processed), 0 failed" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert json.loads((out.parent / "events.jsonl.errors.json").read_text())["errors"] == []


def test_exit_code_2_for_bad_command_lines(tmp_path, capsys):
    out = tmp_path / "e.jsonl"
    assert run_cli(tmp_path / "missing", "-o", out) == 2
    assert "clip folder not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert run_cli(tmp_path / "empty", "-o", out) == 2
    assert "no clips found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        run_cli(tmp_path / "empty", "-o", out, "--workers", "0")
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["perceive", str(tmp_path)])  # -o is required
    assert exc.value.code == 2
    assert run_cli(tmp_path / "empty", "-o", out, "-c", tmp_path / "nope.yaml") == 2
    bad = tmp_path / "badprofile"
    bad.mkdir()
    (bad / "profile.json").write_text("{")
    make_clip(bad / "a.mp4", seconds=0.5)
    assert run_cli(bad, "-o", out) == 2
    assert "profile.json: malformed JSON" in capsys.readouterr().err
    assert not out.exists()
    (bad / "profile.json").write_text('{"timezone": "UTC"}')
    (bad / "a.json").write_text('{"narration": "The user reads."}')
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert run_cli(bad, "-o", blocker / "e.jsonl", "--cache-dir", tmp_path / "c") == 2
    assert "cannot write" in capsys.readouterr().err
    assert run_cli(bad, "-o", out, "--cache-dir", tmp_path / "c") == 0
    assert read_events(out)[0]["user_id"] == "u1"  # the configured default when the profile names no user
    # A captioner the config names but nothing registers: one line naming it, before any clip is read.
    typo = tmp_path / "typo.yaml"
    typo.write_text("perception:\n  captioner: {backend: qwen-v1}\n")
    assert run_cli(bad, "-o", tmp_path / "t.jsonl", "-c", typo, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert "unknown captioner backend 'qwen-v1'" in err and "qwen-vl" in err and not (tmp_path / "t.jsonl").exists()


@pytest.mark.slow
def test_kill_9_then_resume_outputs_each_clip_once(tmp_path):
    d = tmp_path / "clips"
    n = 6
    for i in range(n):
        make_clip(d / f"2026-03-02T1{i}-00-00.mp4", seconds=1.0,
                  speech=f"Clip number {i}. Please remember to water the plants on the balcony this evening.")
    out, cache = tmp_path / "events.jsonl", tmp_path / "cache"
    cmd = [sys.executable, "-m", "cli.main", "perceive", str(d), "-o", str(out), "--cache-dir", str(cache), "--no-progress"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def done_clips():
        return sum(1 for p in cache.rglob("*.json") if '"asr"' in p.read_text(errors="ignore"))

    deadline = time.time() + 60
    while done_clips() < 1 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert not out.exists()  # written atomically at the end: never half a file
    assert 1 <= done_clips() < n

    rerun = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    events = read_events(out)
    assert [e["source"]["clip"] for e in events] == [f"2026-03-02T1{i}-00-00.mp4" for i in range(n)]
    assert all("remember" in e["audio"].lower() for e in events)
    summary = next(line for line in rerun.stderr.splitlines() if line.startswith("perceive:"))
    cached = int(summary.split("(")[1].split(" from cache")[0])
    assert 1 <= cached < n, summary
