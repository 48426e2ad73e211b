"""The contract of a trained artifact (a folder `promem train RECIPE` writes): its metadata record
(meta.json), read and written here only; the one check of whether it can be used as it is
(stale_reason), which the loaders and `promem demo` share; and the one in-process model cache.

Each loader keeps its version constant beside it (memory/construct/artifacts.py for the cue
encoder and the linker, reasoner/gate/model.py for the gate) and passes it in here.
"""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from core.jsonio import atomic_write_json

META_FILE = "meta.json"
T = TypeVar("T")


class ArtifactMeta(BaseModel):
    """What one trained artifact is and what it was trained with (its meta.json)."""

    model_config = ConfigDict(extra="forbid")
    kind: str  # the recipe that made it: cue-encoder | linker | gate | now-head | sft-adapter
    version: int  # of the artifact's format; its loader refuses any other
    data: str = ""  # the training instances file
    data_hash: str = ""
    base: str = ""  # the model it was built on (fine-tuned from, or the embedder it reads)
    cue_encoder: Optional[str] = None  # the cue encoder whose vectors it was trained on
    cue_encoder_fingerprint: Optional[str] = None  # ... and which training run of it (cue_fingerprint)
    threshold: Optional[float] = None  # the decision threshold chosen at training
    seconds: Optional[float] = None  # training time
    recipe: dict[str, Any] = {}  # the recipe settings, as its YAML and overrides gave them
    metrics: dict[str, Any] = {}  # counts and held-out figures, as the recipe reported them
    now: Optional["ArtifactMeta"] = None  # gate: the "now" head saved beside it


class ArtifactError(FileNotFoundError):
    """An artifact that is missing, unreadable or of another version; the message names the command."""


def meta_path(path: str | Path) -> Path:
    return Path(path) / META_FILE


def write_meta(path: str | Path, meta: ArtifactMeta) -> None:
    """Written last by every recipe: its presence marks a complete artifact."""
    atomic_write_json(meta_path(path), meta.model_dump(mode="json"))


def read_meta(path: str | Path) -> Optional[ArtifactMeta]:
    """The artifact's record, None when it has no meta.json. Files of the earlier layout (every
    key at the top level) are read into the record too. Raises ValueError on an unreadable file."""
    f = meta_path(path)
    if not f.is_file():
        return None
    try:
        raw = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{f}: not readable as JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{f}: expected a JSON object")
    try:
        return ArtifactMeta.model_validate(raw)
    except ValidationError:
        return _from_flat(raw)


_KIND_OF_NAME = {"gate-gbm-roles": "gate", "gate-gbm-roles+cue": "gate"}
_COMMON = {"version", "data", "data_hash", "cue_encoder", "cue_encoder_fingerprint", "threshold", "recipe"}


def _from_flat(raw: dict) -> ArtifactMeta:
    """The earlier layout: recipe-specific counts and figures at the top level beside the common keys."""
    kind = raw.get("name") or _KIND_OF_NAME.get(raw.get("kind", ""), raw.get("kind")) or "unknown"
    metrics = dict(raw.get("metrics") or {})
    skip = _COMMON | {"name", "kind", "metrics", "seconds", "train_seconds", "base", "embedder", "now"}
    metrics.update({k: v for k, v in raw.items() if k not in skip})
    if raw.get("kind") in _KIND_OF_NAME:
        metrics["model"] = raw["kind"]
    now = raw.get("now")
    try:
        return ArtifactMeta(
            kind=kind, version=raw.get("version", 1),  # formats before versions were version 1
            data=raw.get("data") or "", data_hash=raw.get("data_hash") or "",
            base=raw.get("base") or raw.get("embedder") or "",
            cue_encoder=raw.get("cue_encoder"), cue_encoder_fingerprint=raw.get("cue_encoder_fingerprint"),
            threshold=raw.get("threshold"), seconds=raw.get("seconds", raw.get("train_seconds")),
            recipe=raw.get("recipe") or {}, metrics=metrics,
            now=_from_flat({"name": "now-head", "version": raw.get("version", 1), **now}) if isinstance(now, dict) else None)
    except ValidationError as exc:
        raise ValueError(f"not an artifact record: {exc}") from None


def cue_fingerprint(spec: str) -> Optional[str]:
    """Identifies one training run of the cue encoder at `spec` (its meta.json holds losses and
    timings); None for "base", the untuned bundled MiniLM."""
    if spec == "base":
        return None
    from core.config import resolve_path

    m = meta_path(resolve_path(spec))
    return hashlib.sha1(m.read_bytes()).hexdigest()[:16] if m.is_file() else None


def cue_encoder_changed(meta: ArtifactMeta, now: str) -> bool:
    """Whether a model trained on cue-encoder vectors saw another cue encoder than the one at `now`."""
    return meta.cue_encoder is not None and meta.cue_encoder_fingerprint != cue_fingerprint(now)


def stale_reason(path: str | Path, version: int, cue_spec: Optional[str] = None) -> Optional[str]:
    """Why the artifact at `path` cannot be used as it is, or None if it can: not trained yet,
    unreadable, another format version, or (cue_spec given) trained with another cue encoder
    than the one at cue_spec. The loaders refuse the first three and warn on the last."""
    try:
        meta = read_meta(path)
    except ValueError as exc:
        return f"its {META_FILE} is unreadable: {exc}"
    if meta is None:
        return "not trained yet"
    if meta.version != version:
        return f"it is version {meta.version}, this code reads version {version}"
    if cue_spec is not None and cue_encoder_changed(meta, cue_spec):
        return "it was trained with another cue encoder"
    return None


def require(path: str | Path, version: int, what: str, recipe: str, hint: str = "") -> ArtifactMeta:
    """The record of a usable artifact, else ArtifactError naming the command that makes one."""
    why = stale_reason(path, version)
    if why is not None:
        raise ArtifactError(f"the {what} at {path}: {why}: run `promem train {recipe}`"
                            + (" again" if why != "not trained yet" else " first") + (f" {hint}" if hint else ""))
    meta = read_meta(path)
    assert meta is not None
    return meta


# -- the model cache ------------------------------------------------------------------------------
_MODELS: dict[tuple, Any] = {}
_LOCK = threading.RLock()  # a loader may load another model while it holds it (the gate its cue encoder)


def stamp(path: str | Path) -> Optional[int]:
    """When the artifact at `path` was last written: its meta.json (written last), else the file or
    folder itself; None when nothing is there (e.g. a model bundled by name)."""
    p = Path(path)
    for f in (meta_path(p), p):
        try:
            return f.stat().st_mtime_ns
        except OSError:
            continue
    return None


def cached_model(kind: str, path: str | Path, settings: str, build: Callable[[], T]) -> T:
    """One instance per (kind, resolved path, stamp(path), settings) in a process: retraining an
    artifact in place gives a fresh load; `settings` is whatever else shapes the instance."""
    key = (kind, str(Path(path).resolve()) if path else "", stamp(path) if path else None, settings)
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = build()
        return _MODELS[key]


def clear_models() -> None:
    with _LOCK:
        _MODELS.clear()
