"""`promem bench report RESULT.json [...] -o REPORT.md`: one comparison report from earlier runs."""
from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("report", help="write a Markdown report (+ PNG plot) comparing RESULT.json files")
    p.add_argument("results", nargs="+", help="RESULT.json files written by `promem bench run`")
    p.add_argument("-o", "--output", required=True, help="REPORT.md (the plot goes beside it as REPORT.png)")
    p.set_defaults(func=run)


def run(args) -> int:
    from bench.report import write_report

    results = []
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as fh:
                r = json.load(fh)
        except (OSError, ValueError) as exc:
            print(f"promem bench report: cannot read {path}: {exc}", file=sys.stderr)
            return 2
        if not isinstance(r, dict) or not {"system", "metrics"} <= set(r):
            print(f"promem bench report: {path} is not a RESULT file (needs 'system' and 'metrics')", file=sys.stderr)
            return 2
        results.append(r)
    md, png = write_report(results, args.output)
    print(f"report: {md} (plot {png})")
    return 0
