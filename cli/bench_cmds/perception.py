"""`promem bench perception CLIP_DIR [-o JSON]`: clips/s and ASR real-time factor of `promem perceive`."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def register(sub) -> None:
    from cli.main import add_config_arg
    from cli.main import positive_int

    p = sub.add_parser("perception", help="perception speed: clips/s and ASR real-time factor (cold cache, then cached rerun)")
    p.add_argument("clip_dir", metavar="CLIP_DIR", help="clip folder (e.g. from `promem sample-clips`)")
    p.add_argument("-o", "--output", default=None, metavar="JSON", help="write the figures here (default: stdout)")
    add_config_arg(p)
    p.add_argument("--workers", type=positive_int, default=None, help="clips processed at once (default: perception.workers)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from cli.main import config_from
    from core.jsonio import atomic_write_json
    from perception.bench import measure
    from perception.clips import ClipFolderError

    cfg = config_from(args)
    if not Path(args.clip_dir).is_dir():
        print(f"promem bench perception: clip folder not found: {args.clip_dir}", file=sys.stderr)
        return 2
    try:
        result = measure(args.clip_dir, cfg, workers=args.workers, progress=not args.no_progress)
    except ClipFolderError as exc:
        print(f"promem bench perception: {exc}", file=sys.stderr)
        return 2
    if args.output:
        atomic_write_json(args.output, result)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        print(json.dumps(result, indent=2))
    if result["clips"] == 0:
        print("promem bench perception: no clips found", file=sys.stderr)
        return 2
    return 3 if result["failed"] else 0
