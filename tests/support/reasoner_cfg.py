"""Test configs: the CPU profile with some reasoner fields replaced."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cfg_with(**reasoner):
    """Nested sections (gate, llm) merge as dicts; other fields replace. No thing reader unless given."""
    from core.config import Config, load_config

    data = load_config(REPO / "configs" / "cpu.yaml", env={}).model_dump()
    # the repository's own artifacts/ holds whatever this checkout trained: a test names what it uses
    data["reasoner"]["gate"]["thing_reader"] = None
    for key, value in reasoner.items():
        data["reasoner"][key] = {**data["reasoner"][key], **value} if isinstance(value, dict) else value
    return Config.model_validate(data)
