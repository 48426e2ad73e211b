"""Memory: context-aware prospective memory (facts, cues, links) per user, in SQLite + FAISS.

For chat agents: `from memory import Memory, prefetch` (memory/library.py, memory/prefetch_block.py).
They are imported on first use, so `import memory.store` stays free of the models' imports.
"""
from __future__ import annotations

_LAZY = {"Memory": "memory.library", "MemoryItem": "memory.library", "EventConflict": "memory.library",
         "prefetch": "memory.prefetch_block"}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'memory' has no attribute {name!r}")
