"""`promem bench serve DATA --users N -o RESULT.json`: request latency of the HTTP service (serve/bench.py)."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def register(sub) -> None:
    from cli.main import add_config_arg

    p = sub.add_parser("serve", help="service latency: users post their timelines event by event over HTTP")
    p.add_argument("data", help="CPMBench instances (JSON Lines); one instance's events per user")
    p.add_argument("--users", type=int, default=4, help="users (the first N instances)")
    p.add_argument("--store", help="memory store folder (default: a fresh temporary one)")
    p.add_argument("-o", "--output", help="write the result JSON here")
    add_config_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from cli.main import config_from
    from core.formats import Instance, read_records
    from core.jsonio import atomic_write_json
    from serve.bench import run_bench

    cfg = config_from(args)
    # The sample's timelines share many events; real users rarely send the same text, so time
    # the models, not the vector cache.
    cfg.memory.embedder.cache_size = 0
    good, bad = read_records(args.data, Instance)
    for err in bad:
        print(f"promem bench serve: skipping {err}", file=sys.stderr)
    instances = [inst for _, inst in good][: args.users]
    if not instances:
        print(f"promem bench serve: {args.data} holds no valid instances", file=sys.stderr)
        return 2
    try:
        if args.store:
            result = run_bench(cfg, instances, Path(args.store))
        else:
            with tempfile.TemporaryDirectory(prefix="promem-bench-serve-") as tmp:
                result = run_bench(cfg, instances, Path(tmp))
    except (OSError, ValueError) as exc:
        print(f"promem bench serve: cannot start the service: {exc}", file=sys.stderr)
        return 2
    result["data"] = str(args.data)
    text = json.dumps(result, indent=2)
    if args.output:
        atomic_write_json(Path(args.output), result)
    print(text)
    return 0
