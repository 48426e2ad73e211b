"""Loading the models trained by `promem train cue-encoder` / `promem train linker`, once per process."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from core.config import resolve_path

LINKER_FILE = "linker.joblib"
_CACHE: dict[tuple[str, float], Any] = {}
_LOCK = threading.Lock()


class MissingArtifact(FileNotFoundError):
    pass


def _need(path: Path, what: str, recipe: str) -> None:
    if not (path / "meta.json").is_file():
        raise MissingArtifact(
            f"{what} not found at {path} (no meta.json): run `promem train {recipe}` first, "
            f"or set memory.construction.{what.replace(' ', '_')} in the config")


def meta(path: str | Path) -> dict:
    return json.loads((resolve_path(path) / "meta.json").read_text(encoding="utf-8"))


def cue_encoder(spec: str, base_embedder_cfg):
    """spec: an artifact folder, or "base" for the untuned bundled MiniLM (ablation)."""
    from core.providers import build_embedder
    from core.providers.embedder import SentenceTransformerEmbedder

    if spec == "base":
        return build_embedder(base_embedder_cfg)
    path = resolve_path(spec)
    _need(path, "cue encoder", "cue-encoder")
    return SentenceTransformerEmbedder(path=str(path / "model"), batch_size=base_embedder_cfg.batch_size,
                                     cache_size=base_embedder_cfg.cache_size)


def linker(spec: str) -> dict | None:
    """{"state_change": classifier, "intent": classifier | None, "threshold": float, ...} or None."""
    if spec == "none":
        return None
    path = resolve_path(spec)
    _need(path, "linker", "linker")
    f = path / LINKER_FILE
    key = (str(f), f.stat().st_mtime)
    with _LOCK:
        if key not in _CACHE:
            import joblib

            _CACHE[key] = joblib.load(f)
        return _CACHE[key]
