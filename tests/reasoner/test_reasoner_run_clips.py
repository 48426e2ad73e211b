"""End to end on the sample clips: `promem run CLIP_DIR` = perceive (real ASR) + the online loop."""
import json

import pytest

from cli.main import main
from core.formats import Decision, Event

pytestmark = pytest.mark.slow


def test_run_on_sample_clips_decides_every_clip_and_resumes(monkeypatch, tmp_path, trained_gate, capsys):
    from bench.sample_clips import write_sample_clips

    clips = tmp_path / "clips"
    summary = write_sample_clips(clips, seed=0, progress=False)
    assert not summary.failed
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER", "base")
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__LINKER", "none")
    monkeypatch.setenv("PROMEM_REASONER__GATE__PATH", str(trained_gate[0]))
    monkeypatch.setenv("PROMEM_PERCEPTION__CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "decisions.jsonl"
    argv = ["run", str(clips), "--store", str(tmp_path / "store"), "-o", str(out), "--timeline"]
    assert main(argv) == 0
    timeline = capsys.readouterr().out
    events = [Event.model_validate(json.loads(x)) for x in (tmp_path / "decisions.events.jsonl").read_text().splitlines()]
    decisions = [Decision.model_validate(json.loads(x)) for x in out.read_text().splitlines()]
    assert len(events) == summary.clips and [d.event_id for d in decisions] == [e.id for e in events]
    profile = json.loads((clips / "profile.json").read_text())
    assert all(e.user_id == profile["user_id"] for e in events)
    when = {e.id: e.dt for e in events}
    assert all(when[r] < when[d.event_id] for d in decisions for r in d.retrieved)
    assert all(d.assist == bool(d.message) for d in decisions)
    assert timeline.count("\n") >= len(events)  # one readable line per clip (two when it speaks)
    # A rerun finds everything done: perception from its cache, no decision made twice.
    assert main(argv) == 0
    assert len(out.read_text().splitlines()) == len(decisions)
    assert "decided 0 (" in capsys.readouterr().out
