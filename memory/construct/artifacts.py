"""Loading the models trained by `promem train cue-encoder` / `promem train linker`, once per
process (core.artifacts.cached_model), each refused unless its meta.json carries the version
defined here (core.artifacts.require)."""
from __future__ import annotations

import logging
from pathlib import Path

from core.artifacts import ArtifactError, ArtifactMeta, cached_model, cue_encoder_changed, cue_fingerprint
from core.artifacts import require as _require
from core.config import resolve_path

LINKER_FILE = "linker.joblib"
LINKER_VERSION = 3  # 3: two features of how far a pair stands out from the other candidates
# 2: saved with the bundled MiniLM's input length (256 tokens), not the training length (96)
CUE_ENCODER_VERSION = 2
log = logging.getLogger(__name__)

__all__ = ["CUE_ENCODER_VERSION", "LINKER_FILE", "LINKER_VERSION", "MissingArtifact", "cue_encoder", "cue_fingerprint",
           "linker", "warn_if_cue_encoder_changed"]


class MissingArtifact(ArtifactError):
    pass


def _usable(path: Path, version: int, what: str, recipe: str, hint: str = "") -> ArtifactMeta:
    try:
        return _require(path, version, what, recipe,
                        hint or f"(or set memory.construction.{what.replace(' ', '_')} in the config)")
    except ArtifactError as exc:
        raise MissingArtifact(str(exc)) from None


def cue_encoder(spec: str, base_embedder_cfg):
    """spec: an artifact folder, or "base" for the untuned bundled MiniLM (ablation).

    One instance per (encoder, embedder settings) in a process: memory and the gate both put the
    current event in the cue space at every decision, and share the vectors it keeps by text."""
    from core.providers import build_embedder
    from core.providers.embedder import SentenceTransformerEmbedder

    if spec == "base":
        return cached_model("cue-encoder", "", "base " + base_embedder_cfg.model_dump_json(),
                            lambda: build_embedder(base_embedder_cfg))
    path = resolve_path(spec)
    _usable(path, CUE_ENCODER_VERSION, "cue encoder", "cue-encoder",
            "(then the linker and the gate, which read its vectors)")
    return cached_model("cue-encoder", path, base_embedder_cfg.model_dump_json(), lambda: SentenceTransformerEmbedder(
        path=str(path / "model"), batch_size=base_embedder_cfg.batch_size, cache_size=base_embedder_cfg.cache_size))


def warn_if_cue_encoder_changed(what: str, path: Path, trained_with: ArtifactMeta, now: str) -> None:
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
    record = _usable(path, LINKER_VERSION, "linker", "linker")

    def load() -> LinkModel:
        import joblib

        bundle = joblib.load(path / LINKER_FILE)
        if bundle.get("version") != LINKER_VERSION:  # the weights file carries the version too
            raise MissingArtifact(f"the linker at {path} is version {bundle.get('version')}, this code reads "
                                  f"version {LINKER_VERSION}: run `promem train linker` again")
        return LinkModel(bundle["intent"], bundle["change"], bundle["state_change"], bundle["threshold"],
                         bundle["intent_threshold"])

    model = cached_model("linker", path, "", load)
    if cue_spec is not None:
        warn_if_cue_encoder_changed("linker", path, record, cue_spec)
    return model
