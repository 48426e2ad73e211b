"""Per-clip result cache keyed by content hash, so a rerun (after a crash or kill -9) redoes only what is missing.

One JSON file per clip content (video bytes + separate audio bytes). Each expensive part is stored
under a fingerprint of the settings that produced it (e.g. the caption under captioner + prompt +
keyframe settings), so changing one backend recomputes only that part. Files are written atomically.
"""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Iterable, Optional

from core.jsonio import atomic_write_json

_CHUNK = 1 << 20


def content_hash(paths: Iterable[Optional[Path]]) -> str:
    h = hashlib.sha256()
    for p in paths:
        if p is None:
            h.update(b"\0none\0")
            continue
        h.update(f"\0{p.suffix.lower()}\0".encode())
        with open(p, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    return h.hexdigest()


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


class ClipCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def load(self, key: str) -> dict[str, Any]:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # a damaged cache entry is only lost work: recompute it

    def get(self, key: str, part: str, fp: str) -> Any:
        return self.load(key).get(part, {}).get(fp)

    def put(self, key: str, part: str, fp: str, value: Any) -> None:
        with self._lock(key):
            data = self.load(key)
            data.setdefault(part, {})[fp] = value
            atomic_write_json(self._path(key), data, indent=None)
