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


def _promem(*argv: str) -> int:
    """Run another promem command in-process, so its own progress bars and messages show."""
    from cli.main import main

    return main(list(argv))


def step_train_data(ctx: DemoContext) -> None:
    from bench.generator import generate
    from core.config import resolve_path
    from core.jsonio import atomic_write_jsonl

    path = resolve_path(ctx.cfg.training.train_data)
    if path.is_file():
        print(f"      {path} already there")
        return
    t = ctx.cfg.training
    instances = generate(t.train_instances, t.seed, "train")
    atomic_write_jsonl(path, [i.dump() for i in instances])
    print(f"      {len(instances)} generated training timelines -> {path}")


def stale_reason(recipe: str, where, cue_spec: str) -> str | None:
    """Why the artifact `promem train RECIPE` made at `where` must be trained again, or None if it can
    be used as it is: the loaders' own check (core.artifacts.stale_reason) against their version."""
    from core.artifacts import stale_reason as why
    from memory.construct.artifacts import CUE_ENCODER_VERSION, LINKER_VERSION
    from reasoner.gate.model import VERSION as GATE_VERSION
    from reasoner.gate.thing_reader import VERSION as READER_VERSION

    version = {"cue-encoder": CUE_ENCODER_VERSION, "linker": LINKER_VERSION, "gate": GATE_VERSION,
               "thing-reader": READER_VERSION}[recipe]
    return why(where, version, cue_spec)


def _train_step(recipe: str, artifact: Callable[[Any], str]) -> Callable[[DemoContext], None]:
    def step(ctx: DemoContext) -> None:
        from core.config import resolve_path

        if not artifact(ctx.cfg):
            print("      not configured; skipped")
            return
        where = resolve_path(artifact(ctx.cfg))
        why = stale_reason(recipe, where, ctx.cfg.memory.construction.cue_encoder)
        if why is None:
            print(f"      {where} already trained")
            return
        if (where / "meta.json").is_file():
            print(f"      {where}: {why}; training it again")
        if _promem("train", recipe, "-c", ctx.cfg.source) != 0:
            raise StepFailed(f"promem train {recipe} failed")

    return step


def step_perceive(ctx: DemoContext) -> None:
    events = ctx.out / "events.jsonl"
    rc = _promem("perceive", str(ctx.clips), "-o", str(events), "-c", ctx.cfg.source)
    if rc not in (0, 3):  # 3: some clips failed, named above; the rest is still worth deciding on
        raise StepFailed(f"promem perceive exited {rc}")
    ctx.results["events"] = events


def step_decide(ctx: DemoContext) -> None:
    import shutil

    from cli.decide import decide_events
    from core.formats import Event, read_records

    # A demo shows the whole timeline each time: start from an empty memory.
    store, out = ctx.out / "store", ctx.out / "decisions.jsonl"
    shutil.rmtree(store, ignore_errors=True)
    out.unlink(missing_ok=True)
    good, bad = read_records(ctx.results["events"], Event)
    if bad:
        raise StepFailed("; ".join(map(str, bad[:3])))
    profile = ctx.expected["profile"]
    decide_events(ctx.cfg, [e for _, e in good], store, profile["user_id"], out,
                  persona=profile.get("persona", ""), timeline=True)
    ctx.results["decisions"] = out


def step_score(ctx: DemoContext) -> None:
    from core.formats import Decision, read_records

    said = {d.event_id: d for _, d in read_records(ctx.results["decisions"], Decision)[0]}
    exp = ctx.expected
    right = wrong = 0
    for clip in exp["clips"]:
        d = said.get(str(Path(clip["clip"]).with_suffix("")))
        spoke = bool(d and d.assist)
        ok = spoke == (clip["expect"] == "assist")
        right += ok
        wrong += not ok
        if not ok or spoke:
            mark = "ok  " if ok else "MISS" if not spoke else "FALSE ALARM"
            print(f"      {mark} {clip['id']}: expected {clip['expect']}" + (f"; said: {d.message}" if spoke else ""))
    print(f"      {right}/{right + wrong} moments right (speak at planted opportunities, silent elsewhere)")
    print(f"      outputs: {ctx.out / 'events.jsonl'}, {ctx.results['decisions']}")


STEPS: list[tuple[str, Callable[[DemoContext], None]]] = [
    ("write sample clips", step_sample_clips),
    ("generate training timelines", step_train_data),
    ("train cue encoder", _train_step("cue-encoder", lambda c: c.memory.construction.cue_encoder)),
    ("train state-change linker", _train_step("linker", lambda c: c.memory.construction.linker)),
    ("train gate", _train_step("gate", lambda c: c.reasoner.gate.path)),
    ("train thing reader", _train_step("thing-reader", lambda c: c.reasoner.gate.thing_reader)),
    ("perceive clips", step_perceive),
    ("decide, event by event", step_decide),
    ("score against the answer key", step_score),
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
    return 0
