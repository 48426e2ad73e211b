"""Visual caption backends behind one interface (registry kind "captioner").

A backend is built from core.config.perception.CaptionerConfig and offers `name` (lands in
perception.captioner), `needs_frames` (whether keyframes must be decoded for it) and
`caption(frames: list[Keyframe], narration: str | None) -> str | None`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Protocol

from core import registry

registry.register("captioner", "narration", "perception.captioners.narration:NarrationCaptioner")
registry.register("captioner", "qwen-vl", "perception.captioners.qwen_vl:QwenVLCaptioner")
registry.register("captioner", "openai", "perception.captioners.openai_vl:OpenAICaptioner")

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
CAPTION_PROMPT = "caption.v1"


class CaptionError(RuntimeError):
    """The caption model failed (load, request, empty answer); fails the clip, not the run."""


class Captioner(Protocol):
    name: str
    needs_frames: bool

    def caption(self, frames: list, narration: Optional[str]) -> Optional[str]: ...


def load_prompt(name: str = CAPTION_PROMPT) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").strip()


def clean_caption(text: str) -> str:
    """Models sometimes emit a thinking block or stray whitespace; the event keeps one plain paragraph."""
    if "</think>" in text:
        text = text.split("</think>", 1)[1]
    return " ".join(text.split())


def build_captioner(cfg) -> Captioner:
    """cfg: core.config.perception.CaptionerConfig."""
    return registry.create("captioner", cfg.backend, cfg)
