"""Local chat model: transformers base weights + an optional PEFT (LoRA) adapter, ChatML prompts.

cfg.model is the base model folder, cfg.adapter the adapter folder. Greedy decoding at
temperature 0, so the same prompt gives the same answer (what the tests and evals need).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from core.providers.hub import hub_weights
from core.providers.llm_openai import LLMError

log = logging.getLogger(__name__)

# Qwen3's own template is not shipped offline; ChatML is what Qwen models are trained on.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


class TransformersChat:
    def __init__(self, cfg):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if not cfg.model:
            raise ValueError("llm backend 'transformers' needs model (a local base-model folder)")
        self.cfg = cfg
        self.torch = torch
        way_out = "the llm section's `model` (e.g. reasoner.llm.model in the profile)"
        with hub_weights(cfg.model, "llm backend 'transformers' model", way_out, ValueError):
            self.tokenizer = AutoTokenizer.from_pretrained(cfg.model)
            model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype="auto")
        if cfg.adapter:
            from peft import PeftModel

            with hub_weights(cfg.adapter, "llm backend 'transformers' adapter", "the llm section's `adapter`",
                             ValueError):
                model = PeftModel.from_pretrained(model, cfg.adapter)
        if not self.tokenizer.chat_template:
            self.tokenizer.chat_template = CHATML_TEMPLATE
        self.model = model.eval()
        self._lock = threading.Lock()  # generate() is not re-entrant on one model

    def prompt_ids(self, messages: list[dict[str, Any]]):
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                  return_dict=True)

    def chat(self, messages: list[dict[str, Any]], max_tokens: int | None = None,
             temperature: float | None = None, **extra: Any) -> str:
        temperature = self.cfg.temperature if temperature is None else temperature
        enc = self.prompt_ids(messages)
        gen: dict[str, Any] = {"max_new_tokens": max_tokens or self.cfg.max_tokens,
                               "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                               "max_time": self.cfg.timeout_s}
        if temperature and temperature > 0:
            gen.update(do_sample=True, temperature=temperature)
        else:
            gen.update(do_sample=False)
        t0 = time.perf_counter()
        try:
            with self._lock, self.torch.inference_mode():
                out = self.model.generate(**enc, **gen)
        except Exception as exc:  # a failing generate must reach callers as one error type
            raise LLMError(f"local model {self.cfg.model!r}: {type(exc).__name__}: {exc}") from exc
        if time.perf_counter() - t0 >= self.cfg.timeout_s:
            raise LLMError(f"local model {self.cfg.model!r}: generation ran past timeout_s={self.cfg.timeout_s}")
        new = out[0, enc["input_ids"].shape[1]:]
        return self.tokenizer.decode(new, skip_special_tokens=True)
