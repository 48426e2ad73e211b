"""`promem intentions --store DIR --user ID [--status S] [--json]`: a user's delayed intentions and their lifecycle.

The store is opened read-only (no lock, nothing written), so this works beside a running service.
"""
from __future__ import annotations

import json
import sys

from cli.main import add_config_arg


def register(sub) -> None:
    from memory.intentions import STATES

    p = sub.add_parser("intentions", help="list a user's intentions (open, raised, resolved, expired, dismissed)")
    p.add_argument("--store", help="memory folder (default: memory.store of the config)")
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--status", choices=STATES, help="only intentions in this state")
    p.add_argument("--json", action="store_true", help="print a JSON list of records (docs/formats.md section 7)")
    add_config_arg(p)
    p.set_defaults(func=run)


def open_store(args, command: str):
    """(config, read-only Store) for `args.store` and `args.user`, or (None, exit code) after a message."""
    from cli._inputs import existing_store
    from memory.lock import StoreError
    from memory.store import Store

    cfg, store = existing_store(args, command)
    if cfg is None:
        return None, store
    try:
        return cfg, Store(store, readonly=True)
    except StoreError as exc:
        print(f"promem {command}: {exc}", file=sys.stderr)
        return None, 2


def run(args) -> int:
    from memory.lock import StoreError

    cfg, store = open_store(args, "intentions")
    if cfg is None:
        return store
    try:
        records = store.intention_records(args.user, args.status)
    except StoreError as exc:
        print(f"promem intentions: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in records], ensure_ascii=False, indent=1))
        return 0
    if not records:
        print(f"(no {args.status + ' ' if args.status else ''}intentions of user {args.user!r})")
        return 0
    print(f"{'id':<16} {'status':<9} {'formed (UTC)':<16} {'since (UTC)':<16} {'for':<10} gist")
    for r in records:
        last = r.transitions[-1].at if r.transitions else r.formed_at
        print(f"{r.id:<16} {r.status:<9} {r.formed_at[:16]:<16} {last[:16]:<16} {r.for_whom[:10]:<10} {r.gist}")
    return 0
