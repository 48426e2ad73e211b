from typing import Optional

from core.config._base import Section
from core.config.models import EmbedderConfig, LLMConfig


class RetrievalConfig(Section):
    k: int = 10
    k_content: int = 2
    k_cue: int = 8
    expand_links: bool = True


class ConstructionConfig(Section):
    backend: str = "encoder"  # encoder = trained cue encoder + linker (CPU); llm = cue/link prompts
    llm: LLMConfig = LLMConfig()
    cue_encoder: str = "artifacts/cue-encoder"
    linker: str = "artifacts/linker"
    link_candidates: int = 8  # m


class IndexConfig(Section):
    type: str = "flat"  # flat | ivf | hnsw


class MemoryConfig(Section):
    embedder: EmbedderConfig = EmbedderConfig()
    construction: ConstructionConfig = ConstructionConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    index: IndexConfig = IndexConfig()
    store: str = "runs/memory"
