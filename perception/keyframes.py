"""Keyframes with OpenCV: uniform samples plus scene changes, capped per clip, upright per rotation metadata."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perception.clips import ClipError

# Scene changes are looked for on a coarse grid; decoding every frame of a long clip buys nothing.
SCAN_FPS = 2.0


@dataclass
class Keyframe:
    t: float  # seconds from clip start
    image: np.ndarray  # RGB uint8, H x W x 3, upright
    reason: str  # "uniform" | "scene"


def _hist(frame_bgr: np.ndarray) -> np.ndarray:
    small = cv2_resize(frame_bgr)
    import cv2

    hsv = cv2.cvtColor(small, cv2.COLOR_BGR2HSV)
    h = cv2.calcHist([hsv], [0, 1], None, [16, 8], [0, 180, 0, 256])
    return cv2.normalize(h, h).flatten()


def cv2_resize(frame: np.ndarray, side: int = 160) -> np.ndarray:
    import cv2

    h, w = frame.shape[:2]
    scale = side / max(h, w)
    return cv2.resize(frame, (max(1, int(w * scale)), max(1, int(h * scale))), interpolation=cv2.INTER_AREA)


def _rotate(frame: np.ndarray, degrees: int) -> np.ndarray:
    import cv2

    d = degrees % 360
    if d == 90:
        return cv2.rotate(frame, cv2.ROTATE_90_CLOCKWISE)
    if d == 180:
        return cv2.rotate(frame, cv2.ROTATE_180)
    if d == 270:
        return cv2.rotate(frame, cv2.ROTATE_90_COUNTERCLOCKWISE)
    return frame


def extract(path: Path, max_frames: int = 8, uniform_frames: int = 4, scene_threshold: float = 0.35) -> list[Keyframe]:
    """Scan the clip at SCAN_FPS; keep `uniform_frames` evenly spaced frames and the strongest scene cuts.

    Scene change = Bhattacharyya distance between HSV histograms of consecutive scanned frames above
    `scene_threshold`. The result is capped at `max_frames` and in time order.
    """
    import cv2

    # Pass 1 keeps only small histograms, so a long clip costs no memory; pass 2 decodes the chosen frames.
    cap, rotation, fps = _open(path)
    step = max(1, int(round(fps / SCAN_FPS)))
    scanned: list[tuple[int, float]] = []  # (frame index, histogram distance to the previous scanned frame)
    prev = None
    idx = 0
    try:
        while cap.grab():
            if idx % step == 0:
                ok, frame = cap.retrieve()
                if ok and frame is not None:
                    h = _hist(frame)
                    dist = 0.0 if prev is None else float(cv2.compareHist(prev, h, cv2.HISTCMP_BHATTACHARYYA))
                    prev = h
                    scanned.append((idx, dist))
            idx += 1
    finally:
        cap.release()
    if not scanned:
        raise ClipError("no decodable video frame (OpenCV)")
    chosen = choose(scanned, max_frames, uniform_frames, scene_threshold)
    wanted = {scanned[i][0]: reason for i, reason in chosen.items()}
    out = []
    cap, rotation, fps = _open(path)
    idx = 0
    try:
        while wanted and cap.grab():
            if idx in wanted:
                ok, frame = cap.retrieve()
                if ok and frame is not None:
                    rgb = cv2.cvtColor(_rotate(frame, rotation), cv2.COLOR_BGR2RGB)
                    out.append(Keyframe(t=idx / fps, image=rgb, reason=wanted.pop(idx)))
            idx += 1
    finally:
        cap.release()
    return out


def _open(path: Path):
    import cv2

    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise ClipError("OpenCV cannot open the clip")
    # Rotate ourselves from the container's metadata, so the result does not depend on whether
    # this OpenCV build auto-rotates.
    cap.set(cv2.CAP_PROP_ORIENTATION_AUTO, 0)
    rotation = int(cap.get(cv2.CAP_PROP_ORIENTATION_META) or 0)
    fps = cap.get(cv2.CAP_PROP_FPS) or 25.0
    return cap, rotation, fps


def choose(scanned: list[tuple[int, float]], max_frames: int, uniform_frames: int, scene_threshold: float) -> dict[int, str]:
    """Positions in `scanned` to keep -> why: evenly spaced ones first, then the strongest cuts, capped."""
    n = len(scanned)
    k = min(uniform_frames, n)
    uniform = sorted({int(round(i * (n - 1) / max(1, k - 1))) for i in range(k)}) if k > 0 else []
    if len(uniform) > max_frames:
        uniform = [uniform[int(round(j * (len(uniform) - 1) / max(1, max_frames - 1)))] for j in range(max_frames)]
    chosen = dict.fromkeys(uniform, "uniform")
    cuts = sorted((i for i in range(1, n) if scanned[i][1] > scene_threshold), key=lambda i: -scanned[i][1])
    for i in cuts:
        if len(chosen) >= max_frames:
            break
        chosen.setdefault(i, "scene")
    return dict(sorted(chosen.items()))
