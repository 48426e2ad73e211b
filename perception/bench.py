"""Perception throughput: clips/s and the ASR real-time factor, measured on a cold cache, then a cached rerun."""
from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from core.config import Config


def measure(clip_dir: str | Path, cfg: Config, workers: Optional[int] = None, progress: bool = True) -> dict[str, Any]:
    from perception.pipeline import perceive_folder

    with tempfile.TemporaryDirectory(prefix="promem-bench-perception-") as cache:
        t0 = time.perf_counter()
        cold = perceive_folder(clip_dir, cfg, workers=workers, cache_dir=cache, progress=progress)
        cold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm = perceive_folder(clip_dir, cfg, workers=workers, cache_dir=cache, progress=False)
        warm_s = time.perf_counter() - t0
    n = len(cold.results)
    kf_s, kf_n = _keyframe_cost(clip_dir, cfg, [r.clip for r in cold.results if r.event is not None])
    audio_s = sum(r.audio_s for r in cold.results)
    asr_s = sum(r.asr_s for r in cold.results)
    events = cold.events
    return {
        "clip_dir": str(clip_dir),
        "config": cfg.source,
        "captioner": cfg.perception.captioner.backend,
        "asr": cfg.perception.asr.backend,
        "workers": workers or cfg.perception.workers,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "clips": n,
        "ok": len(events),
        "failed": len(cold.failed),
        # Cold: every clip decoded, transcribed and captioned; includes loading the models once.
        "wall_s": round(cold_s, 3),
        "clips_per_s": round(n / cold_s, 3) if cold_s > 0 else None,
        "audio_s": round(audio_s, 3),
        "asr_s": round(asr_s, 3),
        "asr_rtf": round(asr_s / audio_s, 4) if audio_s > 0 else None,
        "caption_s": round(sum(r.caption_s for r in cold.results), 3),
        "caption_frames_s": round(sum(r.frames_s for r in cold.results), 3),
        # OpenCV keyframe selection on every good clip, timed on its own: the narration captioner
        # skips it, but a VLM profile pays it per clip.
        "keyframes_s": round(kf_s, 3),
        "keyframes_per_clip_s": round(kf_s / len(events), 4) if events else None,
        "keyframes_total": kf_n,
        # Rerun from the cache: what resuming after a crash costs per clip.
        "cached_rerun_s": round(warm_s, 3),
        "cached_clips_per_s": round(n / warm_s, 3) if warm_s > 0 else None,
        "cached_rerun_all_from_cache": all(r.cached for r in warm.results if r.event is not None),
    }


def _keyframe_cost(clip_dir: str | Path, cfg: Config, rels: list[str]) -> tuple[float, int]:
    from perception import keyframes

    kc = cfg.perception.keyframes
    t0 = time.perf_counter()
    count = sum(len(keyframes.extract(Path(clip_dir) / rel, kc.max_frames, kc.uniform_frames, kc.scene_threshold))
                for rel in rels)
    return time.perf_counter() - t0, count
