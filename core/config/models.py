"""Model endpoints and weights, shared by every stage that calls a model."""
from typing import Optional

from core.config._base import Section


class LLMConfig(Section):
    """A generative model: an OpenAI-compatible endpoint (vLLM, transformers serve, hosted) or local weights."""

    backend: str = "openai"  # openai | transformers
    model: str = ""  # served model / LoRA adapter name, or a local weights path
    base_url: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"
    adapter: Optional[str] = None  # local PEFT adapter path (transformers backend)
    timeout_s: float = 60.0
    max_tokens: int = 512
    temperature: float = 0.0


class EmbedderConfig(Section):
    backend: str = "minilm"  # minilm = the bundled all-MiniLM-L6-v2; sentence-transformers = any local path
    path: Optional[str] = None
    batch_size: int = 64
    cache_size: int = 20000  # texts whose vectors are kept (~1.5 KB each at 384-d); 0 = no cache
