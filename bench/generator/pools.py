"""Data pools a timeline is dressed with: names, personas, everyday distractor events."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from bench.generator.schema import Slot
from core.formats import describe_validation_error

POOLS_DIR = Path(__file__).resolve().parent / "pools"

# Offsets real wearable users live in; each timeline keeps one offset throughout.
UTC_OFFSETS = ("-08:00", "-07:00", "-05:00", "-03:00", "+00:00", "+01:00", "+02:00", "+03:00", "+05:30", "+08:00", "+09:00", "+10:00")


# a timeline has up to 60 events (timeline.MAX_EVENTS) and draws its routine events without
# replacement, so every persona needs at least this many distractors it can have
MIN_DISTRACTORS = 60


@dataclass(frozen=True)
class Persona:
    text: str
    has: frozenset[str]


@dataclass(frozen=True)
class Pools:
    names: tuple[str, ...]
    personas: tuple[Persona, ...]
    distractors: tuple[Slot, ...]


def _load_yaml_list(path: Path) -> list:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty YAML list")
    return data


@lru_cache(maxsize=4)
def load_pools(folder: str | Path = POOLS_DIR) -> Pools:
    folder = Path(folder)
    names = tuple(str(n) for n in _load_yaml_list(folder / "names.yaml"))
    if len(set(names)) != len(names):
        raise ValueError(f"{folder / 'names.yaml'}: duplicate names")
    personas = tuple(Persona(p["text"], frozenset(p.get("has", []))) for p in _load_yaml_list(folder / "personas.yaml"))
    distractors = []
    for n, obj in enumerate(_load_yaml_list(folder / "distractors.yaml"), start=1):
        try:
            distractors.append(Slot.model_validate(obj))
        except ValidationError as exc:
            raise ValueError(f"{folder / 'distractors.yaml'}: entry #{n}: {describe_validation_error(exc)}") from None
    for p in personas:
        n = sum(set(d.requires) <= p.has for d in distractors)
        if n < MIN_DISTRACTORS:
            raise ValueError(f"{folder / 'distractors.yaml'}: only {n} events fit persona {p.text!r} "
                             f"(traits {sorted(p.has)}); a timeline needs {MIN_DISTRACTORS} without repeats - "
                             "add events without `requires` or with these traits")
    return Pools(names, personas, tuple(distractors))
