"""`promem perceive CLIP_DIR -o EVENTS.jsonl`: recorded clips -> sensory-context events.

One event per clip (docs/formats.md section 2), in time order. Event ids are the clip's path relative
to CLIP_DIR without its extension, so they stay the same across reruns. A clip's start comes from
its sidecar "start", a timestamp in its file name, the container's creation time, or the file's
modification time; times without an offset are read in the timezone of the nearest profile.json
(else this machine's) and written with that offset. Results are cached per clip by content hash:
a rerun after a crash or kill -9 redoes only the missing clips.

Exit codes: 0 every clip became an event; 3 some clips failed (listed in EVENTS.jsonl.errors.json,
the others are written); 2 bad command line or unreadable folder.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.main import add_config_arg, config_from, positive_int

EXIT_OK, EXIT_BAD_ARGS, EXIT_SOME_FAILED = 0, 2, 3


def register(sub) -> None:
    p = sub.add_parser("perceive", help="recorded clip folder -> sensory-context events (JSON Lines)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("clip_dir", metavar="CLIP_DIR",
                   help="folder of clips (walked recursively; see docs/formats.md section 1)")
    p.add_argument("-o", "--output", required=True, metavar="EVENTS.jsonl", help="where to write the events")
    add_config_arg(p)
    p.add_argument("--workers", type=positive_int, default=None, help="clips processed at once (default: perception.workers)")
    p.add_argument("--cache-dir", default=None, help="per-clip result cache (default: perception.cache_dir)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from core.registry import UnknownBackend
    from perception.clips import ClipFolderError
    from perception.pipeline import perceive_folder, write_outputs

    try:
        cfg = config_from(args)
    except SystemExit as exc:  # config errors are command-line errors here: exit 2, as documented
        print(exc, file=sys.stderr)
        return EXIT_BAD_ARGS
    clip_dir = Path(args.clip_dir)
    if not clip_dir.is_dir():
        print(f"promem perceive: clip folder not found: {clip_dir}", file=sys.stderr)
        return EXIT_BAD_ARGS
    try:
        report = perceive_folder(clip_dir, cfg, workers=args.workers, cache_dir=args.cache_dir,
                                 progress=not args.no_progress)
    except (ClipFolderError, UnknownBackend) as exc:  # a backend the config names is checked before any clip
        print(f"promem perceive: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    if not report.results:
        print(f"promem perceive: no clips found under {clip_dir} (looked for .mp4 .mov .mkv .webm .avi .m4v)", file=sys.stderr)
        return EXIT_BAD_ARGS
    try:
        errors_path = write_outputs(report, args.output, clip_dir)
    except OSError as exc:  # results stay in the cache: fixing the path and rerunning is quick
        print(report.summary(), file=sys.stderr)
        print(f"promem perceive: cannot write {args.output}: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    print(report.summary(), file=sys.stderr)
    print(f"wrote {len(report.events)} events to {args.output}; errors summary in {errors_path}", file=sys.stderr)
    return EXIT_SOME_FAILED if report.failed else EXIT_OK
