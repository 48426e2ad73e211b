"""`promem reflect --store DIR --user ID [--day DATE] [--json]`: re-read a day's stored events after the
fact, add the intentions and state changes the online pass missed, and precompute the next brief
(memory/reflect.py; through a language model or the trained linker, memory.reflect.backend). It writes
to the store, so it takes the store's writer lock (refused while a service or a `promem remember` runs
on it); a rerun of the same day adds nothing twice.
"""
from __future__ import annotations

import json
import sys
from datetime import date

from cli.main import add_config_arg


def register(sub) -> None:
    p = sub.add_parser("reflect", help="reflect on a day: fill missed intentions and state changes, "
                                       "precompute the brief")
    p.add_argument("--store", help="memory folder (default: memory.store of the config)")
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--day", help="the day, YYYY-MM-DD, in the events' own local time (default: the latest event's)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_config_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from cli._inputs import existing_store
    from memory.construct.artifacts import MissingArtifact
    from memory.lock import StoreError
    from memory.reflect import NeedsLinker, reflect
    from memory.store import Store

    try:
        day = date.fromisoformat(args.day) if args.day else None
    except ValueError:
        print(f"promem reflect: --day: not a date: {args.day!r} (e.g. 2026-03-06)", file=sys.stderr)
        return 2
    cfg, path = existing_store(args, "reflect")
    if cfg is None:
        return path
    try:
        store = Store(path)
    except StoreError as exc:
        print(f"promem reflect: {exc}", file=sys.stderr)
        return 2
    try:
        if day is None:
            latest = store.latest_event(args.user)
            if latest is None:
                print(f"promem reflect: user {args.user!r} has no events in {path}", file=sys.stderr)
                return 2
            day = latest.dt.date()
        report = reflect(cfg, store, args.user, day)
    except (NeedsLinker, MissingArtifact) as exc:
        print(f"promem reflect: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=1))
    else:
        print(f"{report.day} ({report.backend}): {report.events} events re-read; {report.intentions_added} "
              f"intention(s) added, {report.resolved} resolved, {report.cues_added} cue(s) added; next brief "
              f"({report.brief_items} item(s)) precomputed for {report.brief_at}")
    return 0
