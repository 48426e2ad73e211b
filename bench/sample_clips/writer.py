"""Write the sample clip folder: profile.json, expected.json, then each clip's files.

Every file is written under a temporary name and renamed into place, so a clip whose files
all exist is complete; a rerun skips complete clips and redoes the rest (resume after an
interrupt). A folder written with another seed or script version is refused unless
`force`, which then removes only the files that folder's expected.json listed.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from bench.sample_clips.encode import EncodeError, encode_mp4, to_wav16k
from bench.sample_clips.plan import FPS, MAX_SECONDS, ClipPlan, Plan, expected_doc, make_plan
from bench.sample_clips.render import frames
from bench.sample_clips.scenario import Scenario, load_scenario
from bench.sample_clips.speech import SpeechError, pad_to, synthesize, write_wav
from core.jsonio import atomic_write_json

log = logging.getLogger(__name__)

TAIL_S = 1.2  # room after the last spoken word before the clip ends


class SampleClipsError(RuntimeError):
    pass


@dataclass
class Summary:
    out_dir: Path
    clips: int = 0
    written: int = 0
    skipped: int = 0
    removed: int = 0
    with_audio_track: int = 0
    with_wav: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        return (f"{self.clips} clips in {self.out_dir} ({self.written} written, {self.skipped} already there; "
                f"{self.with_audio_track} with speech in the video, {self.with_wav} with a .wav) in {self.seconds:.1f} s")


def _check_tools() -> None:
    missing = [t for t in ("espeak-ng", "ffmpeg") if shutil.which(t) is None]
    if missing:
        raise SampleClipsError(f"missing system tools: {', '.join(missing)}; run `bash tools/sysdeps.sh` "
                               f"(Debian: apt-get install -y espeak-ng ffmpeg)")


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def _complete(out: Path, clip: ClipPlan) -> bool:
    return all((out / rel).is_file() and (out / rel).stat().st_size > 0 for rel in clip.files)


def _write_clip(out: Path, clip: ClipPlan, plan: Plan) -> None:
    spec = clip.spec
    day = out / clip.day_dir
    day.mkdir(parents=True, exist_ok=True)
    mp4 = out / clip.rel(".mp4")
    seconds = clip.seconds
    with tempfile.TemporaryDirectory(prefix="promem-clip-") as tmp:
        speech_wav = None
        if spec.speech:
            samples, rate = synthesize(spec.speech, plan.scenario.voices)
            spoken = len(samples) / rate
            if spoken + TAIL_S > MAX_SECONDS:
                raise SampleClipsError(f"clip {spec.id}: {spoken:.1f} s of speech does not fit in a {MAX_SECONDS} s clip; shorten its lines")
            seconds = max(seconds, spoken + TAIL_S)
        # whole frames only, so video and audio end together
        n_frames = int(round(seconds * FPS))
        seconds = n_frames / FPS
        if spec.speech:
            speech_wav = Path(tmp) / "speech.wav"
            write_wav(speech_wav, pad_to(samples, rate, seconds), rate)
        tmp_mp4 = _tmp_name(mp4)
        encode_mp4(frames(clip, seconds), tmp_mp4, clip.start, speech_wav if spec.audio == "track" else None)
        os.replace(tmp_mp4, mp4)
        if spec.audio == "wav":
            wav = out / clip.rel(".wav")
            tmp_wav = _tmp_name(wav)
            to_wav16k(speech_wav, tmp_wav)
            os.replace(tmp_wav, wav)
    # the sidecar says where and what is seen, never what is said: ASR has to hear it
    atomic_write_json(out / clip.rel(".json"), {"location": spec.location, "narration": spec.narration})


def _remove_stale(out: Path, old: dict, plan: Plan) -> int:
    """Delete files an earlier run listed in its expected.json that this plan does not write."""
    keep = {rel for c in plan.clips for rel in c.files}
    removed = 0
    for entry in old.get("clips", []):
        rel = entry.get("clip")
        if not isinstance(rel, str) or rel.startswith("/") or ".." in Path(rel).parts:
            continue  # never follow a hand-edited path out of the folder
        stem = rel[: -len(".mp4")] if rel.endswith(".mp4") else rel
        for suffix in (".mp4", ".json", ".wav"):
            f = stem + suffix
            if f not in keep and (out / f).is_file():
                (out / f).unlink()
                removed += 1
    return removed


def _clean_temps(out: Path) -> None:
    for tmp in out.glob("*/.*.tmp"):
        tmp.unlink(missing_ok=True)


def write_sample_clips(out_dir: str | Path, seed: int = 0, force: bool = False, progress: bool = True,
                       scenario: Scenario | None = None) -> Summary:
    t0 = time.perf_counter()
    _check_tools()
    out = Path(out_dir)
    scenario = scenario or load_scenario()
    plan = make_plan(scenario, seed)
    summary = Summary(out_dir=out, clips=len(plan.clips))
    expected_path = out / "expected.json"
    if out.exists() and not out.is_dir():
        raise SampleClipsError(f"{out} exists and is not a folder")
    if expected_path.is_file():
        try:
            old = json.loads(expected_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SampleClipsError(f"{expected_path}: unreadable ({exc}); remove the folder or pick another") from None
        same = old.get("seed") == seed and old.get("scenario_version") == scenario.version
        if not same:
            if not force:
                raise SampleClipsError(
                    f"{out} holds sample clips of seed {old.get('seed')} (script version {old.get('scenario_version')}); "
                    f"this run is seed {seed}: use --force to replace them, or another folder")
            summary.removed = _remove_stale(out, old, plan)
    out.mkdir(parents=True, exist_ok=True)
    _clean_temps(out)
    # answer key and profile first: they describe the plan, so an interrupted run can be
    # recognised (and replaced with --force) by what it meant to write
    atomic_write_json(out / "profile.json", scenario.profile.model_dump())
    atomic_write_json(expected_path, expected_doc(plan))
    for clip in tqdm(plan.clips, desc="sample clips", unit="clip", disable=not progress):
        summary.with_audio_track += clip.spec.audio == "track"
        summary.with_wav += clip.spec.audio == "wav"
        if not force and _complete(out, clip):
            summary.skipped += 1
            continue
        try:
            _write_clip(out, clip, plan)
            summary.written += 1
        except (EncodeError, SpeechError, SampleClipsError, OSError) as exc:
            # one bad clip must not cost the others; the rerun retries only what is missing
            log.error("clip %s (%s): %s", clip.rel(".mp4"), clip.spec.id, exc)
            for rel in clip.files:  # an older version of it must not pass for complete
                (out / rel).unlink(missing_ok=True)
            summary.failed.append(f"{clip.rel('.mp4')}: {exc}")
    summary.seconds = time.perf_counter() - t0
    return summary
