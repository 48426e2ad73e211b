"""Importers of the public benchmark data in ../shared/data/external into CPMBench instances."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import REPO_ROOT
from core.formats import Instance

DEFAULT_SRC = REPO_ROOT.parent / "shared" / "data" / "external"


class ImportError_(ValueError):
    """The source data cannot be read at all (missing file, not JSON)."""


@dataclass
class ImportResult:
    instances: list[Instance] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one message per entry left out, naming it and why
    dropped: int = 0  # entries left out by design (CAB's "medium"), not errors


def load_json(path: Path) -> Any:
    if not path.is_file():
        raise ImportError_(f"{path}: not found (pass --src DIR with the public data; see its README.md)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
