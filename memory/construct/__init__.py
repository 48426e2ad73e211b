"""Memory construction: what an event leaves in memory (facts, cues, links), behind one interface.

Backends register under registry kind "constructor": "encoder" (trained cue encoder + linker,
CPU) and "llm" (cue-generation and linking prompts to a chat model).
"""
from core import registry

registry.register("constructor", "encoder", "memory.construct.encoder:EncoderConstructor")
registry.register("constructor", "llm", "memory.construct.llm:LLMConstructor")


def build_constructor(cfg):
    """cfg: core.config.Config (the whole config: constructors need the embedder and artifacts)."""
    return registry.create("constructor", cfg.memory.construction.backend, cfg)
