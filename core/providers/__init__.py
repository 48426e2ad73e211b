"""Interchangeable model backends, built from config through core.registry.

Kinds: "embedder", "llm" here; "captioner", "asr" register in perception.
"""
from core import registry

registry.register("embedder", "minilm", "core.providers.embedder:MiniLMEmbedder")
registry.register("embedder", "sentence-transformers", "core.providers.embedder:SentenceTransformerEmbedder")
registry.register("llm", "openai", "core.providers.llm_openai:OpenAIChat")
registry.register("llm", "transformers", "core.providers.llm_transformers:TransformersChat")


def build_embedder(cfg):
    """cfg: core.config.EmbedderConfig."""
    return registry.create("embedder", cfg.backend, cfg)


def build_llm(cfg):
    """cfg: core.config.LLMConfig."""
    return registry.create("llm", cfg.backend, cfg)
