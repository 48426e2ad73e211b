"""`promem brief --store DIR --user ID [--at TIME] [--location TEXT] [--budget TOKENS] [--json]`:
what is pending and relevant now, ranked within a token budget (memory/brief.py), before the user says anything.

The store is opened read-only (no lock, nothing written), so this works beside a running service.
"""
from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from cli.main import add_config_arg, positive_int


def register(sub) -> None:
    p = sub.add_parser("brief", help="session-start brief: a user's pending intentions relevant now, ranked")
    p.add_argument("--store", help="memory folder (default: memory.store of the config)")
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--at", help="the moment, ISO 8601 with offset (default: now)")
    p.add_argument("--location", help="where the user is, as words (\"grocery store on Main St\")")
    p.add_argument("--budget", type=positive_int, help="token budget (default: memory.intentions.brief_tokens)")
    p.add_argument("--json", action="store_true", help="print the brief as JSON (scores and their terms)")
    add_config_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from cli.intentions import open_store
    from core.timeutil import parse_time
    from memory.brief import brief_from_store, render
    from memory.lock import StoreError

    try:
        at = parse_time(args.at) if args.at else datetime.now(timezone.utc)
    except ValueError as exc:
        print(f"promem brief: --at: {exc} (e.g. 2026-03-06T17:30:00+01:00)", file=sys.stderr)
        return 2
    cfg, store = open_store(args, "brief")
    if cfg is None:
        return store
    try:
        got = brief_from_store(store, args.user, cfg, at, args.location, args.budget)
    except StoreError as exc:
        print(f"promem brief: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    print(json.dumps(got.model_dump(mode="json"), ensure_ascii=False, indent=1) if args.json else render(got))
    return 0
