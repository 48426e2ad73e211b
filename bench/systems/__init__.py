"""Systems compared by the benchmark: each recalls past events for the SAME reasoner.

A system has `name`, `recall(instance, past, current) -> list[Recalled]` (past events given
to the reasoner, in time order) and `close()`. Kind "bench_system" in core.registry:
  promem        this project's memory (memory/api.py), when it is installed
  no-memory     the current event only, like ContextAgent
  full-context  every past event, most recent first into cfg.bench.context_tokens
  rag-bm25      top-k past events by BM25 against the current event
  rag-embed     top-k past events by MiniLM cosine similarity to the current event
"""
from __future__ import annotations

import importlib.util

from core import registry

KIND = "bench_system"

registry.register(KIND, "no-memory", "bench.systems.baselines:NoMemory")
registry.register(KIND, "full-context", "bench.systems.baselines:FullContext")
registry.register(KIND, "rag-bm25", "bench.systems.baselines:RagBM25")
registry.register(KIND, "rag-embed", "bench.systems.baselines:RagEmbed")


def _memory_available() -> bool:
    try:
        return importlib.util.find_spec("memory.api") is not None
    except ImportError:
        return False


PROMEM_MISSING = ("system 'promem' needs the project's memory (memory/api.py with open_memory), "
                  "which is not installed in this checkout; the baselines work without it")
if _memory_available():
    registry.register(KIND, "promem", "bench.systems.promem:ProMem")


class SystemUnavailable(ValueError):
    pass


def system_names() -> list[str]:
    return registry.names(KIND)


def build_system(name: str, cfg):
    """cfg: core.config.Config."""
    if name == "promem" and "promem" not in system_names():
        raise SystemUnavailable(PROMEM_MISSING)
    if name not in system_names():
        raise SystemUnavailable(f"unknown system {name!r}; available: {', '.join(system_names())}")
    return registry.create(KIND, name, cfg)
