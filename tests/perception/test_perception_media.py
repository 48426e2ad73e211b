"""Keyframes (OpenCV), audio (PyAV), container probing: real clips made by ffmpeg in the test."""
import subprocess

import numpy as np
import pytest

from perception import keyframes
from perception.audio import SAMPLE_RATE, clip_audio
from perception.clips import ClipError
from perception.probe import probe
from tests.perception.perception_media import BLUE, GREEN, RED, make_clip, speech_wav, truncate


def corner_means(img):
    return [float(img[:5, :5].mean()), float(img[:5, -5:].mean()), float(img[-5:, :5].mean()), float(img[-5:, -5:].mean())]


@pytest.mark.parametrize("ext", [".mp4", ".mov", ".mkv", ".webm"])
def test_containers_decode(tmp_path, ext):
    clip = make_clip(tmp_path / f"c{ext}", seconds=1.0)
    info = probe(clip)
    assert info.has_video and not info.has_audio and 0.8 < info.duration_s < 1.3
    frames = keyframes.extract(clip, max_frames=4, uniform_frames=2)
    assert frames and frames[0].image.shape == (120, 160, 3) and frames[0].image.dtype == np.uint8


def test_uniform_plus_scene_changes_capped(tmp_path):
    clip = make_clip(tmp_path / "scenes.mp4", seconds=6.0, colors=(RED, GREEN, BLUE))
    frames = keyframes.extract(clip, max_frames=8, uniform_frames=2, scene_threshold=0.35)
    reasons = [f.reason for f in frames]
    assert reasons.count("uniform") == 2 and reasons.count("scene") == 2  # the cuts at 2 s and 4 s
    assert [f.t for f in frames] == sorted(f.t for f in frames)
    scene_times = [f.t for f in frames if f.reason == "scene"]
    assert any(1.9 <= t <= 2.6 for t in scene_times) and any(3.9 <= t <= 4.6 for t in scene_times)
    # Colours are RGB and each scene is represented.
    colours = {tuple(int(v) for v in f.image[60, 100]) for f in frames}
    assert {(255, 0, 0), (0, 255, 0), (0, 0, 255)} <= {tuple(255 if v > 200 else 0 for v in c) for c in colours}
    capped = keyframes.extract(clip, max_frames=3, uniform_frames=5)
    assert len(capped) == 3


def test_rotation_metadata_is_respected(tmp_path):
    clip = make_clip(tmp_path / "rot.mp4", seconds=1.0, rotate=90)
    (first, *_) = keyframes.extract(clip, max_frames=1, uniform_frames=1)
    assert first.image.shape == (160, 120, 3)  # portrait after rotation
    # Same picture as ffmpeg's own display rotation.
    ref = tmp_path / "ref.png"
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(clip), "-frames:v", "1", str(ref)], check=True)
    import cv2

    expected = cv2.cvtColor(cv2.imread(str(ref)), cv2.COLOR_BGR2RGB)
    assert expected.shape == first.image.shape
    got, want = corner_means(first.image), corner_means(expected)
    assert int(np.argmax(got)) == int(np.argmax(want)) and np.allclose(got, want, atol=20)


def test_audio_from_track_from_same_stem_file_and_none(tmp_path):
    with_track = make_clip(tmp_path / "talk.mp4", seconds=1.0, speech="hello there")
    audio = clip_audio(with_track, None)
    assert audio.dtype == np.float32 and audio.ndim == 1 and np.abs(audio).max() > 0.05
    wav = speech_wav("a much longer sentence spoken into a separate recorder", tmp_path / "silent.wav")
    silent = make_clip(tmp_path / "silent.mp4", seconds=1.0)
    assert clip_audio(silent, None) is None  # no audio is normal, not an error
    separate = clip_audio(silent, wav)
    assert separate.size / SAMPLE_RATE > 2.0


def test_corrupt_truncated_and_empty_files_are_clip_errors(tmp_path):
    good = make_clip(tmp_path / "good.mp4", seconds=1.0)
    cut = truncate(good, tmp_path / "cut.mp4", keep=0.5)
    empty = tmp_path / "empty.mkv"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.mov"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    with pytest.raises(ClipError, match="cannot decode"):
        probe(cut)
    with pytest.raises(ClipError, match="empty file"):
        probe(empty)
    with pytest.raises(ClipError, match="cannot decode"):
        probe(junk)
    bad_wav = tmp_path / "bad.wav"
    bad_wav.write_bytes(b"RIFF\x00\x00garbage")
    with pytest.raises(ClipError, match="audio file bad.wav: cannot decode"):
        clip_audio(good, bad_wav)


def test_container_creation_time_is_read(tmp_path):
    from perception.clips import discover, start_time

    clip = make_clip(tmp_path / "holiday.mp4", seconds=0.5, creation_time="2026-03-04T17:00:00Z")
    info = probe(clip)
    assert info.creation_time.startswith("2026-03-04T17:00:00")
    (c,) = discover(tmp_path)
    t, rule = start_time(c, info.creation_time)
    assert rule == "container" and t.timestamp() == 1772643600  # 2026-03-04 17:00 UTC, in any offset
