"""`promem recall --store DIR --user ID --event EVENT.json`: what a decision at that event would retrieve.

The store is opened read-only: recall takes no lock and writes nothing, so it works beside a
running writer and on a store this user may only read.
"""
from __future__ import annotations

import json
import sys

from cli.main import add_config_arg, positive_int


def register(sub) -> None:
    p = sub.add_parser("recall", help="show what memory retrieves for an event (score and path of each)")
    p.add_argument("--event", required=True,
                   help="the current event (docs/formats.md section 2): a JSON object, or a file holding one")
    p.add_argument("--store", help="memory folder (default: memory.store of the config)")
    p.add_argument("--user", default="u1", help="user id (default: u1)")
    p.add_argument("-k", type=positive_int, help="how many events (default: memory.retrieval.k)")
    p.add_argument("--json", action="store_true", help="print JSON Lines instead of text")
    add_config_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from cli._inputs import existing_store
    from core.formats import Event, parse_record
    from memory.api import open_memory
    from memory.construct.artifacts import MissingArtifact
    from memory.lock import StoreError

    cfg, store = existing_store(args, "recall")
    if cfg is None:
        return store
    inline = args.event.lstrip().startswith("{")
    where = "--event" if inline else args.event
    try:
        text = args.event if inline else open(args.event, encoding="utf-8").read()
        event = parse_record(Event, json.loads(text), where)
    except OSError as exc:
        print(f"promem recall: --event {args.event}: not a JSON object, and no readable file ({exc.strerror})",
              file=sys.stderr)
        return 2
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        print(f"promem recall: {where}: not JSON: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # parse_record's message starts with `where`
        print(f"promem recall: {exc}", file=sys.stderr)
        return 2
    try:
        mem = open_memory(cfg, store, args.user, readonly=True)
    except (MissingArtifact, StoreError) as exc:
        print(f"promem recall: {exc}", file=sys.stderr)
        return 2
    with mem:
        if mem.store.count(args.user, "events") == 0:
            print(f"promem recall: user {args.user!r} has no memories in {store}", file=sys.stderr)
            return 1
        got = mem.retrieve(event, args.k)
    for r in got:
        links = [{"event_id": ln.event_id, "kind": ln.kind, "score": round(ln.score, 3)} for ln in r.links]
        if args.json:
            print(json.dumps({"event_id": r.event.id, "time": r.event.time, "score": round(r.score, 4),
                              "path": r.path, "fact": r.fact, "links": links, "text": r.event.text()},
                             ensure_ascii=False))
            continue
        tail = "".join(f"  -> {ln['kind']} {ln['event_id']}" for ln in links)
        print(f"{r.event.time}  {r.event.id:<10} {r.path:<7} {r.score:6.3f}  {r.event.text()[:100]}{tail}")
    if not got:
        print("(nothing before this event)")
    return 0
