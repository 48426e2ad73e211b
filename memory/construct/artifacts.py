"""Loading the models trained by `promem train cue-encoder` / `promem train linker`, once per process."""
from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any

from core.config import resolve_path

LINKER_FILE = "linker.joblib"
LINKER_VERSION = 3  # 3: two features of how far a pair stands out from the other candidates
CUE_ENCODER_VERSION = 2
_CACHE: dict[tuple, Any] = {}
_LOCK = threading.Lock()
log = logging.getLogger(__name__)


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
    """spec: an artifact folder, or "base" for the untuned bundled MiniLM (ablation).

    One instance per (encoder, embedder settings) in a process: memory and the gate both put the
    current event in the cue space at every decision, and share the vectors it keeps by text."""
    from core.providers import build_embedder
    from core.providers.embedder import SentenceTransformerEmbedder

    path = None if spec == "base" else resolve_path(spec)
    if path is not None:
        _need(path, "cue encoder", "cue-encoder")
        found = meta(path).get("version")
        if found != CUE_ENCODER_VERSION:
            raise MissingArtifact(f"the cue encoder at {path} is version {found}, this code reads version "
                                  f"{CUE_ENCODER_VERSION}: run `promem train cue-encoder` again (then the "
                                  "linker and the gate, which read its vectors)")
    key = ("cue", str(path or spec), base_embedder_cfg.model_dump_json())
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = build_embedder(base_embedder_cfg) if path is None else SentenceTransformerEmbedder(
                path=str(path / "model"), batch_size=base_embedder_cfg.batch_size,
                cache_size=base_embedder_cfg.cache_size)
        return _CACHE[key]


def cue_fingerprint(spec: str) -> str | None:
    """Identifies one training run of the cue encoder (its meta.json holds losses and timings)."""
    if spec == "base":
        return None
    m = resolve_path(spec) / "meta.json"
    return hashlib.sha1(m.read_bytes()).hexdigest()[:16] if m.is_file() else None


def cue_encoder_changed(trained_with: dict, now: str) -> bool:
    """Whether a model whose meta.json is `trained_with` saw another cue encoder than the one at `now`."""
    return trained_with.get("cue_encoder_fingerprint", "absent") not in ("absent", cue_fingerprint(now))


def warn_if_cue_encoder_changed(what: str, path: Path, trained_with: dict, now: str) -> None:
    """Models fed with cue-encoder features are tied to the encoder they were trained with."""
    if cue_encoder_changed(trained_with, now):
        log.warning("the %s at %s was trained with another cue encoder than the one now at %s; "
                    "retrain it (`promem train %s`)", what, path, now, what)


def linker(spec: str, cue_spec: str | None = None):
    """The trained LinkModel (memory.construct.link_model), or None for "none".

    cue_spec: the cue encoder construction uses with it (a warning if the linker was trained
    with another one)."""
    if spec == "none":
        return None
    from memory.construct.link_model import LinkModel

    path = resolve_path(spec)
    _need(path, "linker", "linker")
    f = path / LINKER_FILE
    key = (str(f), f.stat().st_mtime)
    with _LOCK:
        if key not in _CACHE:
            import joblib

            bundle = joblib.load(f)
            if bundle.get("version") != LINKER_VERSION:
                raise MissingArtifact(f"the linker at {path} is version {bundle.get('version')}, this code reads "
                                      f"version {LINKER_VERSION}: run `promem train linker` again")
            _CACHE[key] = LinkModel(bundle["intent"], bundle["change"], bundle["state_change"], bundle["threshold"],
                                    bundle["intent_threshold"])
    if cue_spec is not None:
        warn_if_cue_encoder_changed("linker", path, meta(path), cue_spec)
    return _CACHE[key]
