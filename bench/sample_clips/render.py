"""Draw a clip's frames with OpenCV: a coloured room or street backdrop, a labelled object
(or a shop sign), a wearable-style header (day, time, place) and a caption line.

Labels are drawn in, so a vision model can read the scene; a slow drift and a little camera
shake make consecutive frames differ the way a body-worn camera's do.
"""
from __future__ import annotations

import random
from typing import Iterator

import cv2
import numpy as np

from bench.sample_clips.plan import FPS, SIZE, ClipPlan

FONT = cv2.FONT_HERSHEY_SIMPLEX
WHITE, BLACK = (255, 255, 255), (0, 0, 0)


def _fit_text(text: str, max_w: int, scale: float, thick: int) -> float:
    while scale > 0.3 and cv2.getTextSize(text, FONT, scale, thick)[0][0] > max_w:
        scale -= 0.05
    return scale


def _centered(img: np.ndarray, text: str, cx: int, cy: int, max_w: int, scale: float, color, thick: int = 1) -> None:
    scale = _fit_text(text, max_w, scale, thick)
    (w, h), _ = cv2.getTextSize(text, FONT, scale, thick)
    cv2.putText(img, text, (cx - w // 2, cy + h // 2), FONT, scale, color, thick, cv2.LINE_AA)


def _shade(color, f: float):
    return tuple(int(max(0, min(255, v * f))) for v in color)


def _backdrop(w: int, h: int, clip: ClipPlan, shift: int) -> np.ndarray:
    img = np.empty((h, w, 3), np.uint8)
    img[:] = clip.backdrop
    if clip.spec.backdrop == "street":
        # sky, pavement and a row of facades that slide by as the user moves
        img[: h // 3] = _shade(clip.backdrop, 1.35)
        img[int(h * 0.78):] = _shade(clip.backdrop, 0.6)
        for i in range(-1, 5):
            x0 = i * 90 - shift % 90
            cv2.rectangle(img, (x0, h // 4), (x0 + 80, int(h * 0.78)), _shade(clip.backdrop, 0.8 + 0.1 * (i % 3)), -1)
            cv2.rectangle(img, (x0 + 15, h // 3 + 10), (x0 + 65, h // 3 + 45), _shade(clip.backdrop, 1.2), -1)
    else:
        # wall, floor and a window: enough to tell a room from a street
        img[int(h * 0.72):] = _shade(clip.backdrop, 0.65)
        cv2.rectangle(img, (w - 95, 40), (w - 25, 110), _shade(clip.backdrop, 1.3), -1)
        cv2.line(img, (w - 60, 40), (w - 60, 110), _shade(clip.backdrop, 0.8), 2)
    return img


def frames(clip: ClipPlan, seconds: float) -> Iterator[np.ndarray]:
    """BGR frames (SIZE, FPS) for `seconds` of this clip."""
    w, h = SIZE
    rng = random.Random(clip.layout_seed)
    n = int(round(seconds * FPS))
    ox, oy = rng.randint(-30, 30), rng.randint(-10, 10)
    drift = rng.choice([-1, 1]) * rng.uniform(0.5, 2.0)
    day = clip.start.strftime("%a").upper()
    header = f"{day} {clip.start.strftime('%Y-%m-%d %H:%M')}"
    street = clip.spec.backdrop == "street"
    for i in range(n):
        shift = int(i * 6) if street else 0
        img = _backdrop(w + 8, h + 8, clip, shift)
        cx = (w + 8) // 2 + ox + int(i * drift)
        cy = (h + 8) // 2 + oy
        if street:
            # the object is a shop sign over a door
            cv2.rectangle(img, (cx - 100, cy - 60), (cx + 100, cy - 30), (40, 40, 40), -1)
            _centered(img, clip.spec.object, cx, cy - 45, 190, 0.5, (80, 230, 255))
            cv2.rectangle(img, (cx - 25, cy - 20), (cx + 25, cy + 55), (60, 70, 80), -1)
        else:
            cv2.rectangle(img, (cx - 85, cy - 22), (cx + 85, cy + 22), (245, 245, 245), -1)
            cv2.rectangle(img, (cx - 85, cy - 22), (cx + 85, cy + 22), (40, 40, 40), 2)
            _centered(img, clip.spec.object, cx, cy, 160, 0.5, (30, 30, 30))
        # camera shake: crop the slightly larger canvas at a small random offset
        sx, sy = rng.randint(0, 8), rng.randint(0, 8)
        frame = np.ascontiguousarray(img[sy : sy + h, sx : sx + w])
        cv2.rectangle(frame, (0, 0), (w, 20), BLACK, -1)
        cv2.putText(frame, header, (6, 14), FONT, 0.4, WHITE, 1, cv2.LINE_AA)
        if i % FPS < FPS - 1:  # blinking record dot
            cv2.circle(frame, (w - 12, 10), 4, (0, 0, 230), -1)
        loc_scale = _fit_text(clip.spec.location, w - 170, 0.4, 1)
        cv2.putText(frame, clip.spec.location, (150, 14), FONT, loc_scale, (200, 200, 200), 1, cv2.LINE_AA)
        cv2.rectangle(frame, (0, h - 24), (w, h), BLACK, -1)
        _centered(frame, clip.spec.caption, w // 2, h - 12, w - 12, 0.45, WHITE)
        yield frame
