"""`promem run CLIP_DIR --store DIR -o DECISIONS.jsonl`: perceive a clip folder, then decide at each clip.

The events go to DECISIONS.events.jsonl beside the decisions (inspect or fix them, then rerun
or use `promem decide`). Perception caches per clip and decisions resume, so a rerun after an
interruption repeats no finished work.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from cli.main import add_config_arg, config_from

log = logging.getLogger("promem.run")


def register(sub) -> None:
    p = sub.add_parser("run", help="clip folder -> events -> decisions (perceive + decide)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("clip_dir", metavar="CLIP_DIR",
                   help="recorded clips (docs/formats.md section 1; profile.json optional)")
    p.add_argument("--store", required=True, help="memory store folder (created if missing)")
    p.add_argument("-o", "--out", required=True, help="decisions, JSON Lines")
    p.add_argument("--user", help="user id (default: profile.json's, else u1)")
    p.add_argument("--timeline", action="store_true", help="print a readable line per event")
    add_config_arg(p)
    p.set_defaults(func=run)


def events_path(out: Path) -> Path:
    return out.with_name(out.stem + ".events.jsonl")


def run(args) -> int:
    from cli.decide import bad_user, decide_events, pick_user
    from memory.construct.artifacts import MissingArtifact
    from memory.lock import StoreError
    from perception.clips import ClipFolderError
    from perception.pipeline import perceive_folder, write_outputs
    from reasoner.loop import load_profile

    cfg = config_from(args)
    clip_dir, out = Path(args.clip_dir), Path(args.out)
    if not clip_dir.is_dir():
        print(f"promem run: clip folder not found: {clip_dir}", file=sys.stderr)
        return 2
    try:
        report = perceive_folder(clip_dir, cfg, progress=not args.timeline)
    except ClipFolderError as exc:
        print(f"promem run: {exc}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    ev_path = events_path(out)
    write_outputs(report, ev_path, clip_dir)
    for r in report.failed:
        log.warning("clip %s not perceived: %s", r.clip, r.error)  # the others go on
    events = report.events
    if not events:
        print(f"promem run: no clip of {clip_dir} could be perceived", file=sys.stderr)
        return 3
    profile_file = clip_dir / "profile.json"
    try:
        profile = load_profile(profile_file if profile_file.is_file() else None)
    except ValueError as exc:
        log.warning("%s; going on without a persona", exc)
        from core.formats import Profile

        profile = Profile()
    user = pick_user(args.user, profile, events)
    if why := bad_user(user, args.user, profile_file if profile_file.is_file() else None):
        print(f"promem run: {why}", file=sys.stderr)
        return 2
    try:
        counts = decide_events(cfg, events, args.store, user, out, profile.persona, args.timeline)
    except (MissingArtifact, StoreError) as exc:
        print(f"promem run: {exc} (the events are in {ev_path})", file=sys.stderr)
        return 2
    print(f"perceived {len(events)} of {len(report.results)} clips -> {ev_path}; decided {counts['decided']} "
          f"({counts['skipped']} already decided): {counts['assist']} assists -> {out}")
    return 3 if report.failed else 0
