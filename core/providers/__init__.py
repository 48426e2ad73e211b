"""Interchangeable model backends, built from config through core.registry.

Kinds: "embedder", "llm" here; "captioner", "asr" register in perception.
"""
from typing import Protocol, Sequence

import numpy as np

from core import registry

registry.register("embedder", "minilm", "core.providers.embedder:MiniLMEmbedder")
registry.register("embedder", "sentence-transformers", "core.providers.embedder:SentenceTransformerEmbedder")
registry.register("llm", "openai", "core.providers.llm_openai:OpenAIChat")
registry.register("llm", "transformers", "core.providers.llm_transformers:TransformersChat")


class Embedder(Protocol):
    """A sentence embedder, built from core.config.EmbedderConfig; offline (local weights only)."""

    dim: int  # vector length

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), each row L2-normalised so that inner product = cosine."""
        ...


def build_embedder(cfg) -> Embedder:
    """cfg: core.config.EmbedderConfig."""
    return registry.create("embedder", cfg.backend, cfg)


def shared_embedder(cfg) -> Embedder:
    """One instance per embedder settings in a process: memory embeds every event when it comes in
    and the gate embeds the same texts again at each decision; sharing the vectors it keeps by text
    saves a forward pass per decision."""
    from core.artifacts import cached_model

    return cached_model("embedder", "", cfg.model_dump_json(), lambda: build_embedder(cfg))


def build_llm(cfg):
    """cfg: core.config.LLMConfig."""
    return registry.create("llm", cfg.backend, cfg)
