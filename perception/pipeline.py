"""Perceive a clip folder: one sensory-context event per clip (docs/formats.md section 2), in time order.

Each clip's expensive results are cached as soon as they exist, so an interrupted run resumes;
the events file and its errors summary are written atomically at the end.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Optional

from core.config import Config, resolve_path
from core.formats import Event
from core.jsonio import atomic_write_json, atomic_write_jsonl
from core.timeutil import format_time
from perception import keyframes
from perception.asr import ASRError, build_asr
from perception.audio import SAMPLE_RATE, clip_audio
from perception.cache import ClipCache, content_hash, fingerprint
from perception.captioners import CAPTION_PROMPT, CaptionError, build_captioner, captioner_class, load_prompt
from perception.clips import Clip, ClipError, discover, start_time
from perception.probe import probe

log = logging.getLogger(__name__)

PIPELINE_VERSION = 1  # bump when cached results change meaning


@dataclass
class ClipResult:
    clip: str
    event: Optional[Event] = None
    error: Optional[str] = None
    cached: bool = True  # nothing had to be computed
    audio_s: float = 0.0  # seconds of audio transcribed in this run
    asr_s: float = 0.0
    caption_s: float = 0.0
    frames_s: float = 0.0


@dataclass
class PerceiveReport:
    results: list[ClipResult] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def events(self) -> list[Event]:
        return [r.event for r in self.results if r.event is not None]

    @property
    def failed(self) -> list[ClipResult]:
        return [r for r in self.results if r.error is not None]

    def errors_doc(self, clip_dir: Path) -> dict[str, Any]:
        return {
            "clip_dir": str(clip_dir),
            "clips": len(self.results),
            "ok": len(self.events),
            "failed": len(self.failed),
            "errors": [{"clip": r.clip, "reason": r.error} for r in self.failed],
        }

    def summary(self) -> str:
        ok = len(self.events)
        cached = sum(1 for r in self.results if r.event is not None and r.cached)
        lines = [f"perceive: {len(self.results)} clips: {ok} ok ({cached} from cache, {ok - cached} processed), "
                 f"{len(self.failed)} failed, {self.wall_s:.1f} s"]
        lines += [f"  FAILED {r.clip}: {r.error}" for r in self.failed]
        return "\n".join(lines)


class _Lazy:
    """Build a model once, on first need, from any worker thread; a failure is remembered, not retried per clip."""

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._lock = threading.Lock()
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def get(self) -> Any:
        with self._lock:
            if self._value is None and self._error is None:
                try:
                    self._value = self._build()
                except Exception as exc:  # reported on every clip that needed it
                    self._error = exc
            if self._error is not None:
                raise self._error
            return self._value


def event_ids(clips: list[Clip]) -> dict[str, str]:
    """Stable ids from the clip's relative path without extension ("2026-03-03/2026-03-03T08-15-00").

    Reruns and added clips never renumber existing events; the extension is kept only when two
    clips share a stem.
    """
    stems: dict[str, int] = {}
    for c in clips:
        stem = c.rel.rsplit(".", 1)[0]
        stems[stem] = stems.get(stem, 0) + 1
    return {c.rel: (c.rel.rsplit(".", 1)[0] if stems[c.rel.rsplit(".", 1)[0]] == 1 else c.rel) for c in clips}


class Perceiver:
    def __init__(self, cfg: Config, cache_dir: str | Path | None = None):
        self.cfg = cfg
        pc = cfg.perception
        # A --cache-dir given on the command line is relative to the cwd; the config's to the repository.
        self.cache = ClipCache(Path(cache_dir) if cache_dir else resolve_path(pc.cache_dir))
        self.captioner = _Lazy(lambda: build_captioner(pc.captioner))
        self.asr = _Lazy(lambda: build_asr(pc.asr))
        cap = pc.captioner
        cap_cls = captioner_class(cap)
        self.caption_fp = fingerprint(PIPELINE_VERSION, cap.backend, cap_cls.model_id(cap), CAPTION_PROMPT,
                                      load_prompt(), pc.keyframes.model_dump(), cap.max_new_tokens)
        self.asr_fp = fingerprint(PIPELINE_VERSION, pc.asr.backend, pc.asr.model, pc.asr.language, pc.asr.compute_type)
        self.needs_frames = cap_cls.needs_frames

    def perceive_clip(self, clip: Clip, event_id: str) -> ClipResult:
        res = ClipResult(clip=clip.rel)
        try:
            res.event = self._event(clip, event_id, res)
        except (ClipError, CaptionError, ASRError) as exc:
            res.error = str(exc)
        except Exception as exc:  # a bug or model failure on one clip must not stop the others
            log.debug("unexpected failure on %s", clip.rel, exc_info=True)
            res.error = f"{type(exc).__name__}: {exc}"
        return res

    def _event(self, clip: Clip, event_id: str, res: ClipResult) -> Event:
        if clip.name_error:
            raise ClipError(clip.name_error)
        sidecar = clip.load_sidecar()
        try:
            key = content_hash([clip.path, clip.audio_path])
        except OSError as exc:
            raise ClipError(f"unreadable: {exc.strerror or exc}") from None

        info = self.cache.get(key, "probe", str(PIPELINE_VERSION))
        if info is None:
            res.cached = False
            m = probe(clip.path)
            info = {"duration_s": m.duration_s, "has_audio": m.has_audio, "creation_time": m.creation_time}
            self.cache.put(key, "probe", str(PIPELINE_VERSION), info)
        start, _rule = start_time(clip, info["creation_time"])

        narration = sidecar.get("narration")
        if self.needs_frames:
            got = self.cache.get(key, "caption", self.caption_fp)
            if got is None:
                res.cached = False
                captioner = self.captioner.get()
                t0 = time.perf_counter()
                kc = self.cfg.perception.keyframes
                frames = keyframes.extract(clip.path, kc.max_frames, kc.uniform_frames, kc.scene_threshold)
                t1 = time.perf_counter()
                got = {"text": captioner.caption(frames, narration), "name": captioner.name, "frames": len(frames)}
                res.frames_s, res.caption_s = t1 - t0, time.perf_counter() - t1
                self.cache.put(key, "caption", self.caption_fp, got)
            captioner_name = got["name"]
            caption = got["text"]
            # A human narration is kept beside the model's caption: it often names what a camera cannot see.
            visual = " ".join(p for p in (_clean(narration), caption) if p) or None
        else:
            # A frameless captioner reads no video and loads no model: it is asked per clip, uncached.
            captioner = self.captioner.get()
            captioner_name = captioner.name
            visual = _clean(captioner.caption([], narration))

        transcript = sidecar.get("transcript")
        if transcript is not None:
            audio, asr_name = _clean(transcript), "sidecar"
        else:
            got = self.cache.get(key, "asr", self.asr_fp)
            if got is None:
                res.cached = False
                samples = clip_audio(clip.path, clip.audio_path) if (info["has_audio"] or clip.audio_path) else None
                if samples is None or samples.size == 0:
                    got = {"text": None, "name": None, "audio_s": 0.0}
                else:
                    asr = self.asr.get()
                    tr = asr.transcribe(samples)
                    got = {"text": tr.text, "name": asr.name, "audio_s": samples.size / SAMPLE_RATE}
                    res.asr_s, res.audio_s = tr.compute_s, got["audio_s"]
                self.cache.put(key, "asr", self.asr_fp, got)
            audio, asr_name = _clean(got["text"]), got["name"]

        if not visual and not audio:
            why = "no narration in its sidecar" if not self.needs_frames else "the caption was empty"
            raise ClipError(f"nothing to describe: no visual text ({why}) and no speech")
        end = start + timedelta(seconds=info["duration_s"]) if info["duration_s"] > 0 else None
        return Event(
            id=event_id,
            user_id=clip.profile.user_id,
            time=format_time(start),
            end=format_time(end) if end else None,
            location=_clean(sidecar.get("location")),
            visual=visual,
            audio=audio,
            source={"clip": clip.rel},
            perception={"captioner": captioner_name if visual else None, "asr": asr_name if audio else None},
        )


def _clean(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    text = " ".join(str(text).split())
    return text or None


def perceive_folder(clip_dir: str | Path, cfg: Config, workers: Optional[int] = None,
                    cache_dir: str | Path | None = None, progress: bool = True) -> PerceiveReport:
    """Process every clip; per-clip failures are in the report, folder-level ones raise ClipFolderError."""
    from tqdm import tqdm

    clip_dir = Path(clip_dir)
    clips = discover(clip_dir, default_user=cfg.perception.default_user_id)
    ids = event_ids(clips)
    perceiver = Perceiver(cfg, cache_dir)
    report = PerceiveReport()
    t0 = time.perf_counter()
    workers = max(1, workers or cfg.perception.workers)
    with tqdm(total=len(clips), unit="clip", desc="perceive", disable=not progress) as bar:
        if workers == 1:
            for c in clips:
                report.results.append(perceiver.perceive_clip(c, ids[c.rel]))
                bar.update(1)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(perceiver.perceive_clip, c, ids[c.rel]) for c in clips]
                for fut in as_completed(futures):
                    report.results.append(fut.result())
                    bar.update(1)
    report.wall_s = time.perf_counter() - t0
    order = {c.rel: i for i, c in enumerate(clips)}
    report.results.sort(key=lambda r: order[r.clip])
    return report


def sort_events(events: list[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.dt, e.source["clip"]))


def write_outputs(report: PerceiveReport, out: str | Path, clip_dir: Path) -> Path:
    """EVENTS.jsonl (time order) and EVENTS.jsonl.errors.json, both atomic; returns the errors file path."""
    out = Path(out)
    atomic_write_jsonl(out, [{k: v for k, v in e.dump().items() if v is not None} for e in sort_events(report.events)])
    errors_path = out.with_name(out.name + ".errors.json")
    atomic_write_json(errors_path, report.errors_doc(clip_dir))
    return errors_path
