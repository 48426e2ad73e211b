"""The CPU default: the sidecar's narration is the visual description; no frames, no model."""
from __future__ import annotations

from typing import Optional


class NarrationCaptioner:
    name = "narration"
    needs_frames = False

    @classmethod
    def model_id(cls, cfg) -> Optional[str]:
        return None

    def __init__(self, cfg=None):
        self.cfg = cfg

    def caption(self, frames: list, narration: Optional[str]) -> Optional[str]:
        text = " ".join((narration or "").split())
        return text or None
