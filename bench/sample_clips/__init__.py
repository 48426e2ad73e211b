"""Bundled sample clips: three scripted days of a wearable's recordings (scenario.yaml),
rendered as a real clip folder (docs/formats.md section 1) with an answer key (expected.json).

Stages: scenario (the script, checked) -> plan (seeded times and looks) -> render (OpenCV
frames) + speech (espeak-ng) -> encode (ffmpeg: H.264/AAC, 16 kHz WAV) -> writer.
"""
from bench.sample_clips.writer import SampleClipsError, Summary, write_sample_clips

__all__ = ["SampleClipsError", "Summary", "write_sample_clips"]
