"""Weights named by Hugging Face hub id: when they are not on this machine, one message that says
which model was looked for, where (the hub cache), and the way out. Every loader that accepts a
hub id loads inside `hub_weights(...)`, so none ends in the library's "check your internet
connection"."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class ModelUnavailable(OSError):
    """Weights named by hub id that are neither cached here nor downloadable now."""


def hub_cache() -> Path:
    """Where huggingface_hub keeps downloaded weights (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub)."""
    try:
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)
    except ImportError:
        home = os.environ.get("HF_HOME") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
        return Path(os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub"))


def offline() -> bool:
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
               for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def is_local(spec: str) -> bool:
    """A folder on this machine rather than a hub id ("org/name")."""
    return Path(spec).expanduser().exists() or spec.startswith(("/", ".", "~"))


def cached_folder(model_id: str) -> Path:
    return hub_cache() / ("models--" + model_id.replace("/", "--"))


def missing_message(model_id: str, what: str, way_out: str, exc: BaseException | None = None) -> str:
    """`what` names the role ("base model"), `way_out` the setting that takes a local folder instead."""
    cache = hub_cache()
    why = ("HF_HUB_OFFLINE is set, so nothing was downloaded" if offline()
           else f"downloading it failed{f' ({type(exc).__name__})' if exc is not None else ''}")
    return (f"{what} {model_id!r} is not on this machine: it is not in the Hugging Face cache at {cache} "
            f"(looked for {cached_folder(model_id)}) and {why}. "
            f"Way out: give a local folder with the weights ({way_out}), or on a connected machine run "
            f"`huggingface-cli download {model_id}` and copy that cache folder here "
            f"(or set HF_HOME to where it is).")


@contextmanager
def hub_weights(model_id: str, what: str, way_out: str, error: type[Exception] = ModelUnavailable) -> Iterator[None]:
    """Load weights inside this block; a failure comes out as `error`: for a hub id the library
    cannot resolve, missing_message(...); for weights that are here (a local folder, or cached)
    but do not load, their own error, naming the model."""
    try:
        yield
    except (OSError, ValueError) as exc:
        if isinstance(exc, error):
            raise
        if is_local(model_id) and not Path(model_id).expanduser().exists():
            raise error(f"cannot load {what} {model_id!r}: no such folder (set by {way_out})") from exc
        if is_local(model_id) or cached_folder(model_id).is_dir():
            raise error(f"cannot load {what} {model_id!r}: {type(exc).__name__}: {exc}") from exc
        raise error(missing_message(model_id, what, way_out, exc)) from exc
