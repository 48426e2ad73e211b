"""Qwen3-VL (or Qwen2.5-VL) through transformers, from local weights: keyframes in, caption out."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional

from perception.captioners import CaptionError, clean_caption, load_prompt


class QwenVLCaptioner:
    needs_frames = True

    @classmethod
    def model_id(cls, cfg) -> Optional[str]:
        return cfg.model_path

    def __init__(self, cfg):
        if not cfg.model_path:
            raise CaptionError("captioner 'qwen-vl' needs perception.captioner.model_path (a local Qwen3-VL weights folder)")
        path = Path(cfg.model_path)
        if not (path / "config.json").is_file():
            raise CaptionError(f"captioner 'qwen-vl': no model at {path} (expected a folder with config.json)")
        import torch
        from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

        self.cfg = cfg
        self.name = f"qwen-vl:{path.name}"
        self.prompt = load_prompt()
        # Tokenizer and image processor are loaded on their own rather than as the model's processor:
        # the processor also builds the video processor, which needs torchvision (absent on the CPU
        # profile); keyframes go in as images, so only these two parts are needed.
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.image_processor = AutoImageProcessor.from_pretrained(path)
        device = cfg.device
        dtype = torch.float32 if device == "cpu" else "auto"
        self.model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype).to(device).eval()
        self.device = device
        mc = self.model.config
        self.image_token = self.tokenizer.convert_ids_to_tokens(mc.image_token_id)
        self.merge = int(getattr(self.image_processor, "merge_size", 2))
        self._lock = threading.Lock()

    def build_prompt(self, n_tokens_per_image: list[int]) -> str:
        """Qwen's ChatML with one <|vision_start|>...<|vision_end|> span per keyframe.

        Written out rather than taken from a chat template because released checkpoints keep the
        template in different files (tokenizer, processor, .jinja) and this layout is the same for all.
        """
        images = "".join(f"<|vision_start|>{self.image_token * n}<|vision_end|>" for n in n_tokens_per_image)
        return f"<|im_start|>user\n{images}{self.prompt}<|im_end|>\n<|im_start|>assistant\n"

    def caption(self, frames: list, narration: Optional[str]) -> Optional[str]:
        import torch
        from PIL import Image

        if not frames:
            raise CaptionError("no keyframes to caption")
        images = [Image.fromarray(f.image) for f in frames]
        vis = self.image_processor(images=images, return_tensors="pt")
        grid = vis["image_grid_thw"]
        counts = [int(g.prod()) // (self.merge ** 2) for g in grid]
        text = self.build_prompt(counts)
        enc = self.tokenizer(text, return_tensors="pt")
        inputs = {**enc, **vis}
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with self._lock, torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.cfg.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tokenizer.pad_token_id)
        new = out[0, enc["input_ids"].shape[1]:]
        caption = clean_caption(self.tokenizer.decode(new, skip_special_tokens=True))
        if not caption:
            raise CaptionError(f"{self.name} returned an empty caption")
        return caption
