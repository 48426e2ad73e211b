"""Chat client for any OpenAI-compatible endpoint (vLLM, transformers serve, hosted APIs)."""
from __future__ import annotations

import os
from typing import Any


class LLMError(RuntimeError):
    """The model could not answer: timeout, HTTP error, refused connection."""


class OpenAIChat:
    def __init__(self, cfg):
        from openai import OpenAI

        if not cfg.base_url:
            raise ValueError("llm backend 'openai' needs base_url (e.g. http://127.0.0.1:8000/v1)")
        self.cfg = cfg
        self.model = cfg.model
        self.client = OpenAI(
            base_url=cfg.base_url,
            api_key=os.environ.get(cfg.api_key_env) or "EMPTY",
            timeout=cfg.timeout_s,
            max_retries=0,
        )

    def chat(self, messages: list[dict[str, Any]], max_tokens: int | None = None,
             temperature: float | None = None, **extra: Any) -> str:
        try:
            resp = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                max_tokens=max_tokens or self.cfg.max_tokens,
                temperature=self.cfg.temperature if temperature is None else temperature,
                **extra,
            )
        except Exception as exc:  # the SDK raises many types; callers need one
            raise LLMError(f"{self.cfg.base_url} model {self.model!r}: {type(exc).__name__}: {exc}") from exc
        return resp.choices[0].message.content or ""
