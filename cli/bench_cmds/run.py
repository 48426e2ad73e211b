"""`promem bench run FILE --system NAME[,NAME...]`: replay timelines, decide, judge, score, report.

With one system the result goes to RESULT.json (docs/formats.md section 6); with several, each
system's result goes to RESULT.<system>.json and the report compares them all.
"""
from __future__ import annotations

import sys
from pathlib import Path

from cli.main import add_config_arg, config_from



def register(sub) -> None:
    p = sub.add_parser("run", help="run systems on a CPMBench file and write RESULT.json (+ a report)")
    p.add_argument("file", help="CPMBench JSON Lines file")
    p.add_argument("--system", required=True,
                   help="system name(s), comma-separated: promem, no-memory, full-context, rag-bm25, rag-embed")
    add_config_arg(p)
    p.add_argument("-o", "--output", required=True, help="RESULT.json (RESULT.<system>.json for several systems)")
    p.add_argument("--report", help="also write this Markdown report (and a PNG plot beside it)")
    p.add_argument("--workers", type=int, default=None, help="processes (default: bench.workers of the config)")
    p.add_argument("--retrieval-only", action="store_true",
                   help="do not ask the reasoner: measure only DIR and SCR")
    p.add_argument("--judge", help="keywords | llm (default: bench.judge of the config)")
    p.add_argument("--limit", type=int, default=None, help="only the first N valid instances")
    p.add_argument("--fresh", action="store_true", help="ignore cached decisions (they are still rewritten)")
    p.add_argument("--group-by", action="append", default=[], metavar="KEY",
                   help="also break metrics down by this (dotted) instance key, e.g. source.relation_type")
    p.set_defaults(func=run)


def output_paths(output: str, systems: list[str]) -> dict[str, Path]:
    out = Path(output)
    if len(systems) == 1:
        return {systems[0]: out}
    return {s: out.with_name(f"{out.stem}.{s}{out.suffix or '.json'}") for s in systems}


def run(args) -> int:
    from bench.harness import HarnessError, run_benchmark
    from bench.judges import build_judge
    from bench.report import write_report
    from bench.systems import PROMEM_MISSING, SystemUnavailable, system_names
    from bench.validate import validate_file
    from core.jsonio import atomic_write_json
    from core.registry import UnknownBackend

    cfg = config_from(args)
    systems = [s.strip() for s in args.system.split(",") if s.strip()]
    for s in systems:
        if s not in system_names():
            why = PROMEM_MISSING if s == "promem" else f"unknown system {s!r}; available: {', '.join(system_names())}"
            print(f"promem bench run: {why}", file=sys.stderr)
            return 2
    try:
        instances, violations = validate_file(args.file)
    except OSError as exc:
        print(f"promem bench run: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    for v in violations:
        print(f"skipped: {v}", file=sys.stderr)
    if args.limit is not None:
        instances = instances[: args.limit]
    if not instances:
        print(f"promem bench run: no valid instance in {args.file}", file=sys.stderr)
        return 2
    judge = None
    if not args.retrieval_only:
        try:
            judge = build_judge(cfg, args.judge)
        except UnknownBackend as exc:
            print(f"promem bench run: {exc}", file=sys.stderr)
            return 2
    workers = args.workers if args.workers is not None else cfg.bench.workers
    results = []
    paths = output_paths(args.output, systems)
    failed = 0
    broken = []
    for s in systems:
        try:
            result = run_benchmark(instances, s, cfg, data=args.file, judge=judge,
                                   retrieval_only=args.retrieval_only, workers=workers, fresh=args.fresh,
                                   group_by=args.group_by)
        except (HarnessError, SystemUnavailable, ValueError) as exc:
            # One system that cannot run (untrained artifacts) must not cost the others' results.
            print(f"promem bench run: {s}: {exc}", file=sys.stderr)
            broken.append(s)
            continue
        if violations:
            result["skipped"] = [str(v) for v in violations]
        atomic_write_json(paths[s], result)
        failed += len(result["errors"])
        m = result["metrics"]
        print(f"{s}: " + ", ".join(f"{k} {'-' if v is None else v}" for k, v in m.items()) + f"  -> {paths[s]}")
        results.append(result)
    if not results:
        return 2
    if args.report:
        md, png = write_report(results, args.report)
        print(f"report: {md} (plot {png})")
    if failed:
        print(f"promem bench run: {failed} instance decision(s) failed (see the log); rerun to retry them",
              file=sys.stderr)
    if broken:
        print(f"promem bench run: system(s) not run: {', '.join(broken)}", file=sys.stderr)
    return 1 if (failed or violations or broken) else 0
