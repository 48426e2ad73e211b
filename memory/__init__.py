"""Memory: context-aware prospective memory (facts, cues, links) per user, in SQLite + FAISS."""
