"""Any OpenAI-compatible multimodal chat endpoint (vLLM serving Qwen3-VL, hosted APIs): frames as base64 images."""
from __future__ import annotations

import base64
from typing import Any, Optional

from perception.captioners import CaptionError, clean_caption, load_prompt

# Keyframes are downscaled before upload: VLM servers resize anyway and requests stay small.
MAX_SIDE = 768
JPEG_QUALITY = 85


def encode_frame(image, max_side: int = MAX_SIDE) -> str:
    """RGB uint8 array -> data URL of a JPEG."""
    import cv2

    h, w = image.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    if scale < 1.0:
        image = cv2.resize(image, (int(w * scale), int(h * scale)), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise CaptionError("could not encode a keyframe as JPEG")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def build_messages(prompt: str, frames: list) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": encode_frame(f.image)}} for f in frames]
    content.append({"type": "text", "text": prompt})
    return [{"role": "user", "content": content}]


class OpenAICaptioner:
    needs_frames = True

    @classmethod
    def model_id(cls, cfg) -> Optional[str]:
        return cfg.llm.model

    def __init__(self, cfg, client=None):
        from core.providers import build_llm

        if not cfg.llm.model:
            raise CaptionError("captioner 'openai' needs perception.captioner.llm.model (the served model name)")
        self.cfg = cfg
        self.name = cfg.llm.model
        self.prompt = load_prompt()
        self.client = client or build_llm(cfg.llm)

    def caption(self, frames: list, narration: Optional[str]) -> Optional[str]:
        from core.providers.llm_openai import LLMError

        if not frames:
            raise CaptionError("no keyframes to caption")
        try:
            text = self.client.chat(build_messages(self.prompt, frames), max_tokens=self.cfg.max_new_tokens, temperature=0.0)
        except LLMError as exc:
            raise CaptionError(str(exc)) from None
        caption = clean_caption(text)
        if not caption:
            raise CaptionError(f"{self.name} returned an empty caption")
        return caption
