"""`promem bench perception` measures a real run: clips/s, ASR real-time factor, cached rerun."""
import json

import pytest

from cli.main import main
from tests.perception.perception_media import make_clip


@pytest.mark.slow
def test_bench_perception_writes_figures(tmp_path, capsys):
    d = tmp_path / "clips"
    make_clip(d / "2026-03-02T08-15-00.mp4", seconds=1.0, speech="The bus leaves at seven fifteen.")
    make_clip(d / "2026-03-02T09-15-00.mp4", seconds=1.0, speech="Do not forget the umbrella.")
    out = tmp_path / "perception.json"
    assert main(["bench", "perception", str(d), "-o", str(out), "--no-progress"]) == 0
    r = json.loads(out.read_text())
    assert (r["clips"], r["ok"], r["failed"], r["asr"], r["captioner"]) == (2, 2, 0, "faster-whisper", "narration")
    assert r["audio_s"] > 2.0 and r["asr_s"] > 0 and r["asr_rtf"] == pytest.approx(r["asr_s"] / r["audio_s"], rel=1e-2)
    assert r["clips_per_s"] == pytest.approx(2 / r["wall_s"], rel=1e-2)
    assert r["cached_rerun_all_from_cache"] and r["cached_rerun_s"] < r["wall_s"]
