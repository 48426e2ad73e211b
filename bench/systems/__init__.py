"""Systems compared by the benchmark: each recalls past events for the SAME reasoner.

A system follows the `BenchSystem` protocol below and is built from the whole config
(core.config.Config). Kind "bench_system" in core.registry:
  promem        this project's memory (memory/api.py), when it is installed
  no-memory     the current event only, like ContextAgent
  full-context  every past event, most recent first into cfg.bench.context_tokens
  rag-bm25      top-k past events by BM25 against the current event
  rag-embed     top-k past events by MiniLM cosine similarity to the current event
"""
from __future__ import annotations

import importlib.util
from typing import Protocol, Sequence, runtime_checkable

from core import registry
from core.formats import Event, Instance
from core.recall import Recalled

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


@runtime_checkable
class BenchSystem(Protocol):
    """What the harness (bench/harness.py) relies on. One instance serves many timelines in a
    row (one per worker process), so nothing of one timeline may leak into the next."""

    name: str  # the registered name; results and caches are filed under it

    # Milliseconds per stage of the last recall(), set by recall(). "retrieve" is the decision-time
    # cost; "ingest" (building a memory of the past) is background work a wearable does as events
    # arrive. Left empty, the harness times the whole recall() call as "retrieve".
    last_timing: dict[str, float]

    def recall(self, instance: Instance, past: Sequence[Event], current: Event) -> list[Recalled]:
        """The past events handed to the reasoner at `current`, in time order. `past` is the
        timeline before `current`, in time order; `instance` is given for its id (a private
        store per timeline), never for its intentions or labels."""
        ...

    def close(self) -> None:
        """Release what the system holds (models, stores); called once, after its last recall."""
        ...


def system_names() -> list[str]:
    return registry.names(KIND)


def build_system(name: str, cfg) -> BenchSystem:
    """cfg: core.config.Config."""
    if name == "promem" and "promem" not in system_names():
        raise SystemUnavailable(PROMEM_MISSING)
    if name not in system_names():
        raise SystemUnavailable(f"unknown system {name!r}; available: {', '.join(system_names())}")
    return registry.create(KIND, name, cfg)
