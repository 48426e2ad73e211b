"""Typed configuration: YAML profile -> Config, with PROMEM_* environment overrides.

`PROMEM_MEMORY__RETRIEVAL__K=12` sets memory.retrieval.k (sections joined by "__", case-insensitive).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import ValidationError

from core.config._base import Section
from core.config.bench import BenchConfig
from core.config.limits import LimitsConfig
from core.config.memory import MemoryConfig
from core.config.models import EmbedderConfig, LLMConfig
from core.config.perception import PerceptionConfig
from core.config.reasoner import ReasonerConfig
from core.config.serve import ServeConfig
from core.config.training import TrainingConfig

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO_ROOT / "configs" / "cpu.yaml"
ENV_PREFIX = "PROMEM_"
# PROMEM_* variables that are not config overrides: the public data folder of bench.importers.
NOT_OVERRIDES = frozenset({"PROMEM_DATA"})


class Config(Section):
    profile: str = "cpu"
    perception: PerceptionConfig = PerceptionConfig()
    memory: MemoryConfig = MemoryConfig()
    reasoner: ReasonerConfig = ReasonerConfig()
    training: TrainingConfig = TrainingConfig()
    serve: ServeConfig = ServeConfig()
    bench: BenchConfig = BenchConfig()
    limits: LimitsConfig = LimitsConfig()
    source: str = ""  # the file it came from, for messages


class ConfigError(ValueError):
    pass


def _apply_env(data: dict[str, Any], env: Mapping[str, str]) -> list[str]:
    applied = []
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name in NOT_OVERRIDES:
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"environment variable {name}: {part!r} is not a section")
        node[path[-1]] = yaml.safe_load(raw) if raw != "" else ""
        applied.append(name)
    return applied


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Load a profile; unknown or mistyped keys raise ConfigError naming the key and the file."""
    path = Path(path) if path else DEFAULT_CONFIG
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    applied = _apply_env(data, os.environ if env is None else env)
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key '{key}'")
            else:
                problems.append(f"key '{key}': {err['msg']} (got {err.get('input')!r})")
        origin = f" (environment overrides: {', '.join(applied)})" if applied else ""
        raise ConfigError(f"{path}{origin}: " + "; ".join(problems)) from None
    cfg.source = str(path)
    return cfg


def resolve_path(p: str | Path) -> Path:
    """Relative paths in configs are relative to the repository root, so commands work from any cwd."""
    p = Path(p)
    return p if p.is_absolute() else REPO_ROOT / p


__all__ = ["Config", "ConfigError", "load_config", "resolve_path", "LLMConfig", "EmbedderConfig", "DEFAULT_CONFIG", "REPO_ROOT"]
