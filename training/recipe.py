"""What every recipe in training/recipes/ shares: its YAML loaded into its pydantic model, and its
command-line arguments (--data, --recipe, -o/--out) resolved one way.

Paths given on the command line are relative to the current directory; paths from a config
profile or a recipe YAML are relative to the repository root (core.config.resolve_path).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from core.config import resolve_path
from training.errors import TrainingError

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
    p.add_argument("--recipe", dest="recipe_path", metavar="YAML",
                   help=f"recipe YAML (default: training/configs/{default_recipe(name).name})")
    p.add_argument("-o", "--out", help=f"artifact folder (default: <training.artifacts>/{out_default})")


def arg_path(arg: Optional[str], configured: str | Path) -> Path:
    """A path from the command line (relative to the current directory), else the configured one."""
    return Path(arg).absolute() if arg else resolve_path(configured)


def data_path(args, cfg) -> Path:
    return arg_path(getattr(args, "data", None), cfg.training.train_data)


def out_path(args, cfg, folder: str) -> Path:
    return arg_path(getattr(args, "out", None), Path(cfg.training.artifacts) / folder)
