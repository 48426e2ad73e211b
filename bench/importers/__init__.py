"""Importers of the public benchmark data (LoCoMo, LoCoMo-Plus, ContextAgent's CAB) into CPMBench instances.

The data is read in place from one folder, resolved by `data_dir`: `--src DIR`, else
`$PROMEM_DATA`, else `data/external` under the current directory. Nothing is copied.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.formats import Instance

DATA_ENV = "PROMEM_DATA"
DEFAULT_DIR = Path("data") / "external"

# Where each file is published (the files are used exactly as released).
RELEASES = {
    "the LoCoMo-Plus release (https://github.com/xjtuleeyf/Locomo-Plus, folder data/; locomo10.json there "
    "holds the LoCoMo conversations of snap-research/locomo)": ("locomo_plus.json", "locomo10.json"),
    "ContextAgent's CAB release (https://github.com/bf-yang/ContextAgent, folder data/cab/)":
        ("cab_test.json", "cab_train.json"),
}


class ImportError_(ValueError):
    """The source data cannot be read at all (missing file, not JSON)."""


@dataclass
class ImportResult:
    instances: list[Instance] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one message per entry left out, naming it and why
    dropped: int = 0  # entries left out by design (CAB's "medium"), not errors


def data_dir(src: str | Path | None = None) -> Path:
    """The public data folder: `src` (the --src flag), else $PROMEM_DATA, else ./data/external."""
    if src:
        return Path(src)
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else DEFAULT_DIR


def _origin(src: str | Path | None) -> str:
    if src:
        return "--src"
    return f"${DATA_ENV}" if os.environ.get(DATA_ENV) else "the default, no --src or $" + DATA_ENV


def missing_data(names: list[str], src: str | Path | None = None) -> str | None:
    """None when every file is in the data folder, else one message: which files are missing,
    where (and how that folder was chosen), where to get them, and how to point at them."""
    folder = data_dir(src)
    missing = [n for n in names if not (folder / n).is_file()]
    if not missing:
        return None
    where = "; ".join(f"{', '.join(n for n in files if n in missing)} from {release}"
                      for release, files in RELEASES.items() if set(files) & set(missing))
    return (f"public data not found in {folder} ({_origin(src)}): {', '.join(missing)}. "
            f"Download {where}; put them in one folder and pass --src DIR or set {DATA_ENV}=DIR "
            f"(default: {DEFAULT_DIR} under the current directory)")


def require(names: list[str], src: str | Path | None = None) -> Path:
    """The data folder holding every file of `names`, or ImportError_ with missing_data's message."""
    msg = missing_data(names, src)
    if msg:
        raise ImportError_(msg)
    return data_dir(src)


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
