"""What every recipe in training/recipes/ shares: its YAML loaded into its pydantic model, and its
command-line arguments (--data, --recipe, -o/--out) resolved one way.

Paths given on the command line are relative to the current directory; paths from a config
profile or a recipe YAML are relative to the repository root (core.config.resolve_path).
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from core.config import resolve_path
from core.formats import Instance
from training import data
from training.errors import TrainingError

log = logging.getLogger(__name__)

CONFIGS = Path(__file__).resolve().parent / "configs"
R = TypeVar("R", bound=BaseModel)


def default_recipe(name: str) -> Path:
    """training/configs/<name>.yaml (dashes as underscores)."""
    return CONFIGS / f"{name.replace('-', '_')}.yaml"


def load_recipe(model: type[R], name: str, path: str | Path | None = None, **overrides) -> R:
    """The recipe YAML at `path` (default: default_recipe(name)) with the overrides that are not None."""
    path = Path(path) if path else default_recipe(name)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise TrainingError(f"cannot read recipe {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise TrainingError(f"recipe {path}: expected a mapping of keys, found {type(raw).__name__}")
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise TrainingError(f"recipe {path}: {exc}") from None


def add_common_args(p, name: str, out_default: str) -> None:
    """--data, --recipe (dest recipe_path) and -o/--out, the same for every recipe."""
    p.add_argument("--data", help="CPMBench train instances (default: the profile's training.train_data)")
    p.add_argument("--no-extra-data", action="store_true",
                   help="train on --data alone, without the files of training.extra_data")
    p.add_argument("--recipe", dest="recipe_path", metavar="YAML",
                   help=f"recipe YAML (default: training/configs/{default_recipe(name).name})")
    p.add_argument("-o", "--out", help=f"artifact folder (default: <training.artifacts>/{out_default})")


def arg_path(arg: Optional[str], configured: str | Path) -> Path:
    """A path from the command line (relative to the current directory), else the configured one."""
    return Path(arg).absolute() if arg else resolve_path(configured)


def data_path(args, cfg) -> Path:
    return arg_path(getattr(args, "data", None), cfg.training.train_data)


@dataclass
class TrainingData:
    instances: list[Instance]
    source: str      # the files read, for the artifact's record
    data_hash: str   # of all of them, in order


def training_data(args, cfg, limit: Optional[int] = None) -> TrainingData:
    """The train file (--data, else training.train_data; its first `limit` instances) plus every
    file of training.extra_data unless --no-extra-data (missing ones are skipped with a warning naming them)."""
    paths = [data_path(args, cfg)]
    instances = data.load_instances(paths[0], limit)
    for extra in [] if getattr(args, "no_extra_data", False) else cfg.training.extra_data:
        path = resolve_path(extra)
        if not path.is_file():
            log.warning("no extra training data at %s (training.extra_data); training without it", path)
            continue
        more = data.load_instances(path)
        log.info("training data: %d instances from %s joined to %d from %s", len(more), path, len(instances), paths[0])
        instances += more
        paths.append(path)
    digest = hashlib.sha256("".join(data.data_hash(p) for p in paths).encode()).hexdigest()[:16]
    return TrainingData(instances, " + ".join(str(p) for p in paths), digest if len(paths) > 1 else data.data_hash(paths[0]))


def out_path(args, cfg, folder: str) -> Path:
    return arg_path(getattr(args, "out", None), Path(cfg.training.artifacts) / folder)
