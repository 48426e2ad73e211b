"""`promem bench validate FILE`: check a CPMBench file against docs/formats.md section 3."""
from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("validate",
                       help="check a CPMBench file (docs/formats.md section 3); non-zero exit on any violation")
    p.add_argument("file", help="CPMBench JSON Lines file")
    p.add_argument("--max", type=int, default=200, help="print at most this many violations (default 200)")
    p.set_defaults(func=run)


def run(args) -> int:
    from bench.validate import validate_file

    try:
        instances, violations = validate_file(args.file)
    except OSError as exc:
        print(f"promem bench validate: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    for v in violations[: args.max]:
        print(v, file=sys.stderr)
    if len(violations) > args.max:
        print(f"... and {len(violations) - args.max} more", file=sys.stderr)
    bad = len({(v.line) for v in violations})
    print(f"{args.file}: {len(instances)} valid instance(s), {len(violations)} violation(s) on {bad} line(s)")
    return 1 if violations else 0
