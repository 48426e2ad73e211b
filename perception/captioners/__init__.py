"""Visual caption backends behind one interface (registry kind "captioner").

A backend is a class registered here and built from core.config.perception.CaptionerConfig;
the `Captioner` protocol below is its contract. The pipeline reads `needs_frames` and
`model_id(cfg)` from the class before building it (building loads the model).
"""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Optional, Protocol

from core import registry

registry.register("captioner", "narration", "perception.captioners.narration:NarrationCaptioner")
registry.register("captioner", "qwen-vl", "perception.captioners.qwen_vl:QwenVLCaptioner")
registry.register("captioner", "openai", "perception.captioners.openai_vl:OpenAICaptioner")

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
CAPTION_PROMPT = "caption.v1"


class CaptionError(RuntimeError):
    """The caption model failed (load, request, empty answer); fails the clip, not the run."""


class Captioner(Protocol):
    """A visual caption backend."""

    name: str  # lands in each event's perception.captioner, e.g. "qwen-vl:Qwen3-VL-8B"
    needs_frames: ClassVar[bool]  # whether keyframes must be decoded for it (False: no video is read)

    @classmethod
    def model_id(cls, cfg) -> Optional[str]:
        """The weights or served model it captions with, from its config section: part of the
        caption cache's fingerprint, so changing models recomputes captions. None: no model."""
        ...

    def caption(self, frames: list, narration: Optional[str]) -> Optional[str]:
        """Caption from keyframes (perception.keyframes.Keyframe) and the sidecar's narration;
        None or "" when there is nothing to say. Raises CaptionError when the model fails."""
        ...


def load_prompt(name: str = CAPTION_PROMPT) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").strip()


def clean_caption(text: str) -> str:
    """Models sometimes emit a thinking block or stray whitespace; the event keeps one plain paragraph."""
    if "</think>" in text:
        text = text.split("</think>", 1)[1]
    return " ".join(text.split())


def captioner_class(cfg) -> type[Captioner]:
    """The registered class for cfg.backend, imported but not built (its model is not loaded)."""
    return registry.resolve("captioner", cfg.backend)


def build_captioner(cfg) -> Captioner:
    """cfg: core.config.perception.CaptionerConfig."""
    return registry.create("captioner", cfg.backend, cfg)
