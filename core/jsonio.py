"""JSON / JSON Lines I/O that never loses data: atomic writes, line-numbered read errors."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator


@dataclass
class LineError:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any | LineError]]:
    """Yield (line number, parsed object or LineError); blank lines are skipped.

    Lines are decoded one by one, so a line that is not UTF-8 is reported and the next is read.
    """
    path = str(path)
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield no, LineError(path, no, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                                              "save the file as UTF-8")
                continue
            if not text.strip():
                continue
            try:
                yield no, json.loads(text)
            except json.JSONDecodeError as exc:
                yield no, LineError(path, no, f"malformed JSON: {exc.msg} (column {exc.colno})")
            except RecursionError:
                yield no, LineError(path, no, "malformed JSON: nested too deeply")


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write via a temp file in the same folder + fsync + rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")


def atomic_write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def append_jsonl(path: str | Path, row: Any) -> None:
    """Append one line and fsync: a crash leaves at most a partial last line, which readers skip."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def staging_dir(out: str | Path) -> Path:
    """An empty folder beside `out` (OUT.tmp) to write a new artifact into before replace_dir swaps it in."""
    import shutil

    tmp = Path(out).with_name(Path(out).name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def replace_dir(tmp: str | Path, out: str | Path) -> None:
    """Swap a fully written folder in under its real name, so a crash never leaves half an artifact there."""
    import shutil

    tmp, out = Path(tmp), Path(out)
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def quote_untrusted(value: Any) -> str:
    """Recorded text (captions, transcripts, personas) as one JSON literal for a prompt, with '<' and
    '>' escaped so that nothing in it can pose as a tag of the prompt (<events>, </data>)."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
