"""`promem remember EVENTS.jsonl --store DIR [--user ID]`: add sensory events to a user's memory."""
from __future__ import annotations

import sys
from collections import defaultdict

from cli.main import add_config_arg, config_from, positive_int


def register(sub) -> None:
    p = sub.add_parser("remember", help="add events (JSON Lines) to a user's memory; reruns resume")
    p.add_argument("events", help="events file (docs/formats.md section 2)")
    p.add_argument("--store", help="memory folder (default: memory.store of the config)")
    p.add_argument("--user", help="user id (default: each event's user_id, else u1)")
    p.add_argument("--batch", type=positive_int, help="events committed together (default: memory.construction.batch_size)")
    add_config_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from tqdm import tqdm

    from cli._inputs import EXIT_UNUSABLE, read_events_file
    from core.config import resolve_path
    from core.formats import Event
    from core.userid import check_user_id
    from memory.api import open_memory
    from memory.construct.artifacts import MissingArtifact
    from memory.lock import StoreError

    if args.user and (why := check_user_id(args.user)):
        print(f"promem remember: --user: {why}", file=sys.stderr)
        return 2
    cfg = config_from(args)
    if args.batch:
        cfg.memory.construction.batch_size = args.batch
    store = resolve_path(args.store or cfg.memory.store)
    got = read_events_file(args.events, "remember", cfg.limits)
    if got is None:
        return EXIT_UNUSABLE
    good, bad = got
    by_user: dict[str, list[tuple[int, Event]]] = defaultdict(list)
    for no, e in good:
        if args.user and e.user_id and e.user_id != args.user:
            print(f"{args.events}:{no}: event {e.id!r} has user_id {e.user_id!r}, not --user {args.user!r}; skipped",
                  file=sys.stderr)
            bad.append(None)
            continue
        if not args.user and e.user_id and (why := check_user_id(e.user_id)):
            print(f"{args.events}:{no}: event {e.id!r}: key 'user_id': {why}; skipped", file=sys.stderr)
            bad.append(None)
            continue
        by_user[args.user or e.user_id or "u1"].append((no, e))
    for err in bad:
        if err is not None:
            print(f"{err}; skipped (the other lines are remembered)", file=sys.stderr)
    for user, lines in by_user.items():
        try:
            mem = open_memory(cfg, store, user)
        except (MissingArtifact, StoreError) as exc:
            print(f"promem remember: {exc}", file=sys.stderr)
            return 2
        with mem:
            clash = set(mem.conflicts([e for _, e in lines]))
            for n in sorted(clash):
                no, e = lines[n]
                print(f"{args.events}:{no}: event id {e.id!r} is already remembered with other content; skipped "
                      f"(an id names one event: send a changed event under a new id)", file=sys.stderr)
                bad.append(None)
            events = [e for n, (_, e) in enumerate(lines) if n not in clash]
            with tqdm(total=len(events), desc=f"remember {user}", unit="event") as bar:
                new = mem.add_many(events, progress=bar.update)
            c = mem.check()
        print(f"{user}: {new} new, {len(events) - new} already remembered; store {store}: {c['events']} events, "
              f"{c['facts']} facts, {c['event_cues']} event cues, {c['links']} links, {c['intentions']} intentions")
    return 1 if bad else 0
