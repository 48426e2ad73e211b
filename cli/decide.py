"""`promem decide EVENTS.jsonl --store DIR [--user ID] -o DECISIONS.jsonl`: the online loop over recorded events."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

from cli.main import add_config_arg, config_from

log = logging.getLogger("promem.decide")


def register(sub) -> None:
    p = sub.add_parser("decide", help="walk events in time order: decide at each from memory of the past, then remember it")
    p.add_argument("events", help="sensory-context events, JSON Lines (docs/formats.md section 2)")
    p.add_argument("--store", required=True, help="memory store folder (created if missing; reused across runs)")
    p.add_argument("--user", help="user id (default: the profile's, else the events', else u1)")
    p.add_argument("-o", "--out", required=True,
                   help="decisions, JSON Lines (docs/formats.md section 4); a rerun resumes")
    p.add_argument("--profile", help="profile.json with the persona (docs/formats.md section 1)")
    p.add_argument("--persona", help="personal context text (overrides the profile's)")
    p.add_argument("--timeline", action="store_true", help="print a readable line per event")
    add_config_arg(p)
    p.set_defaults(func=run)


def pick_user(explicit, profile, events) -> str:
    if explicit:
        return explicit
    if "user_id" in profile.model_fields_set and profile.user_id:
        return profile.user_id
    ids = {e.user_id for e in events if e.user_id}
    return ids.pop() if len(ids) == 1 else "u1"


def bad_user(user: str, explicit, profile_path) -> str | None:
    """Why the picked user id cannot name files in the store (it comes from input data), or None."""
    from core.userid import check_user_id

    why = check_user_id(user)
    if why is None:
        return None
    origin = "--user" if explicit else f"'user_id' of {profile_path}" if profile_path else "'user_id' of the events"
    return f"{origin}: {why}; pass a valid --user"


def decide_events(cfg, events, store, user, out, persona="", timeline=False, stream=None) -> dict:
    """Shared by `promem decide` and `promem run`: one user's events only, through the loop."""
    from core.userid import user_file
    from memory.api import open_memory
    from reasoner.api import build_reasoner
    from reasoner.guard import Guard
    from reasoner.loop import DecisionLoop
    from reasoner.timeline import timeline_line

    mine = [e for e in events if e.user_id in (None, user)]
    if len(mine) < len(events):
        # One user's memory is never visible to another: foreign events are not remembered here.
        log.warning("skipping %d events of other users (deciding for user %r)", len(events) - len(mine), user)
    store = Path(store)
    memory = open_memory(cfg, store, user)  # creates the folder and takes its writer lock
    try:
        guard_path = user_file(store, "guard-", user, ".json")
        guard = Guard(cfg.reasoner.cooldown_hours, cfg.reasoner.intention_ttl_hours, guard_path)
        loop = DecisionLoop(cfg, memory, build_reasoner(cfg), persona=persona, guard=guard)
        show = (lambda e, d: print(timeline_line(e, d), file=stream or sys.stdout, flush=True)) if timeline else None
        return loop.run(mine, out, on_decision=show, progress=not timeline)
    finally:
        memory.close()


def run(args) -> int:
    from cli._inputs import EXIT_UNUSABLE, read_events_file
    from memory.construct.artifacts import MissingArtifact
    from memory.lock import StoreError
    from reasoner.loop import load_profile

    cfg = config_from(args)
    try:
        profile = load_profile(args.profile)
    except ValueError as exc:
        print(f"promem decide: {exc}", file=sys.stderr)
        return 2
    got = read_events_file(args.events, "decide", cfg.limits)
    if got is None:
        return EXIT_UNUSABLE
    good, bad = got
    for err in bad:
        log.warning("skipping %s", err)
    events = [e for _, e in good]
    user = pick_user(args.user, profile, events)
    if why := bad_user(user, args.user, args.profile):
        print(f"promem decide: {why}", file=sys.stderr)
        return 2
    persona = args.persona if args.persona is not None else profile.persona
    try:
        counts = decide_events(cfg, events, args.store, user, args.out, persona, args.timeline)
    except (MissingArtifact, StoreError) as exc:
        print(f"promem decide: {exc}", file=sys.stderr)
        return 2
    print(f"decided {counts['decided']} events ({counts['skipped']} already decided, {len(bad)} bad lines skipped, "
          f"{counts['conflicts']} ids sent again with other content skipped): "
          f"{counts['assist']} assists, {counts['errors']} model errors -> {args.out}")
    return 0
