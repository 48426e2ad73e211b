"""`promem demo`: the whole pipeline on the bundled sample clips, as a list of named steps.

Each step is a function taking the shared DemoContext; later stages (perceive -> remember ->
decide) are appended to STEPS and find what earlier steps wrote in the context.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from cli.main import add_config_arg, config_from


class StepFailed(RuntimeError):
    pass


@dataclass
class DemoContext:
    args: argparse.Namespace
    cfg: Any
    out: Path  # demo-out/
    clips: Path  # demo-out/clips: the sample clip folder
    results: dict[str, Any] = field(default_factory=dict)  # what steps hand on to later steps

    @property
    def expected(self) -> dict:
        return json.loads((self.clips / "expected.json").read_text(encoding="utf-8"))


def step_sample_clips(ctx: DemoContext) -> None:
    from bench.sample_clips import SampleClipsError, write_sample_clips

    try:
        summary = write_sample_clips(ctx.clips, seed=ctx.args.seed, force=False, progress=True)
    except SampleClipsError as exc:
        raise StepFailed(str(exc)) from None
    if summary.failed:
        raise StepFailed(f"{len(summary.failed)} clips failed: " + "; ".join(summary.failed[:3]))
    print(f"      {summary.line()}")
    exp = ctx.expected
    print(f"      user {exp['profile']['user_id']}: {exp['profile']['persona']}")
    print("      planted intentions (formation -> opportunity: what the agent should do):")
    for it in exp["intentions"]:
        via = f" -> resolved {Path(it['state_change']).stem}" if it["state_change"] else ""
        print(f"        {it['id']} {Path(it['formation']).stem}{via} -> {Path(it['opportunity']).stem}: "
              f"{it['expect_at_opportunity']}  ({it['gist']})")
    print(f"      near misses (stay silent): {', '.join(Path(n['clip']).stem for n in exp['near_misses'])}")
    ctx.results["sample_clips"] = summary


STEPS: list[tuple[str, Callable[[DemoContext], None]]] = [
    ("write sample clips", step_sample_clips),
]


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the pipeline end to end on the bundled sample clips",
                       description="Writes the sample clip folder to OUT/clips (kept if already there) "
                       "and runs each pipeline step on it, printing what each step did.")
    add_config_arg(p)
    p.add_argument("--out", default="demo-out", help="output folder (default demo-out)")
    p.add_argument("--seed", type=int, default=0, help="sample clip seed (default 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    out = Path(args.out)
    ctx = DemoContext(args=args, cfg=cfg, out=out, clips=out / "clips")
    for n, (name, fn) in enumerate(STEPS, start=1):
        print(f"[{n}/{len(STEPS)}] {name} ...", flush=True)
        try:
            fn(ctx)
        except StepFailed as exc:
            print(f"promem demo: step '{name}' failed: {exc}", file=sys.stderr)
            return 1
    if len(STEPS) == 1:
        print("next: perceive -> remember -> decide on these clips are chained in as those stages land "
              f"(answer key: {ctx.clips / 'expected.json'})")
    return 0
