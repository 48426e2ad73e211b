"""Reading a command's events file: one message and exit code per way it can be unusable, the same
for every command that takes one."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

EXIT_UNUSABLE = 2  # no such file, a folder, unreadable, or not one valid event in it


def read_events_file(path: str | Path, command: str, limits) -> Optional[tuple[list, list]]:
    """(good (line, Event) pairs, bad LineErrors), or None after printing why nothing can be read.
    Events over the size caps (cfg.limits) are bad lines too."""
    from core.formats import Event, read_records
    from core.limits import drop_oversized

    path = Path(path)
    why = None
    if path.is_dir():
        why = f"{path} is a folder, not an events file (JSON Lines, docs/formats.md section 2)"
    elif not path.is_file():
        why = f"{path}: no such file"
    else:
        try:
            good, bad = read_records(path, Event)
            good, too_large = drop_oversized(good, limits, path)
            bad += too_large
        except OSError as exc:
            why = f"{path}: cannot read ({exc.strerror or exc})"
        else:
            if good:
                return good, bad
            for err in bad:
                print(f"{err}; skipped", file=sys.stderr)
            why = f"{path} holds no valid events" + ("" if bad else " (it is empty)")
    print(f"promem {command}: {why}", file=sys.stderr)
    return None


def existing_store(args, command: str):
    """(config, store folder) for `args.store` and a valid `args.user`, or (None, exit code) after
    printing why: a bad user id, or no memory store there yet."""
    from cli.main import config_from
    from core.config import resolve_path
    from core.userid import check_user_id
    from memory.store import DB_NAME

    if why := check_user_id(args.user):
        print(f"promem {command}: --user: {why}", file=sys.stderr)
        return None, EXIT_UNUSABLE
    cfg = config_from(args)
    store = resolve_path(args.store or cfg.memory.store)
    if not (store / DB_NAME).is_file():
        print(f"promem {command}: no memory store at {store} (run `promem remember EVENTS --store {store}` first)",
              file=sys.stderr)
        return None, EXIT_UNUSABLE
    return cfg, store
