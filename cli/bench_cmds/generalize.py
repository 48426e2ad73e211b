"""`promem bench generalize`: cross-validation by category (bench/generalize.py): every trained
model retrained per fold without the held-out categories, every system tested on them."""
from __future__ import annotations

import sys
from pathlib import Path

from cli.main import add_config_arg, config_from


def register(sub) -> None:
    p = sub.add_parser("generalize", help="cross-validation by category: train without some categories, test on them")
    add_config_arg(p)
    p.add_argument("-o", "--output", default="runs/generalize",
                   help="output folder: fold models, results, generalize.json and .md (default: runs/generalize); "
                        "a rerun resumes there")
    p.add_argument("--folds", type=int, default=None,
                   help="group the categories into N folds (default: leave one category out)")
    p.add_argument("--n-train", type=int, default=None,
                   help="training timelines per fold (default: training.train_instances of the config)")
    p.add_argument("--n-test", type=int, default=40, help="test timelines per held-out category (default: 40)")
    p.add_argument("--systems", default=None,
                   help="comma-separated systems (default: promem,no-memory,full-context,rag-bm25,rag-embed); "
                        "promem+trigger adds promem with the context trigger on (memory.trigger), on the same "
                        "fold models")
    p.add_argument("--seed", type=int, default=None,
                   help="generation seed of the training timelines; test ones use seed + 1 (default: training.seed)")
    p.add_argument("--judge", help="keywords | llm (default: bench.judge of the config)")
    p.add_argument("--recipe", action="append", default=[], metavar="NAME=YAML",
                   help="train model NAME (cue-encoder, linker, gate) with this recipe YAML instead of "
                        "training/configs/NAME.yaml; repeatable")
    p.add_argument("--workers", type=int, default=None, help="processes per system run (default: bench.workers)")
    p.set_defaults(func=run)


def run(args) -> int:
    from bench.generalize import SYSTEMS, TRIGGER_SYSTEM, GeneralizeError, Settings
    from bench.generalize import run as run_generalize
    from bench.systems import PROMEM_MISSING, system_names
    from core.registry import UnknownBackend
    from training.errors import TrainingError

    cfg = config_from(args)
    systems = [s.strip() for s in (args.systems or ",".join(SYSTEMS)).split(",") if s.strip()]
    for s in systems:
        if s not in system_names() and not (s == TRIGGER_SYSTEM and "promem" in system_names()):
            why = (PROMEM_MISSING if s in ("promem", TRIGGER_SYSTEM)
                   else f"unknown system {s!r}; available: {', '.join(system_names())}")
            print(f"promem bench generalize: {why}", file=sys.stderr)
            return 2
    if args.n_test < 1 or (args.n_train is not None and args.n_train < 1):
        print("promem bench generalize: --n-train and --n-test must be at least 1", file=sys.stderr)
        return 2
    recipes = dict(r.split("=", 1) for r in args.recipe if "=" in r)
    if len(recipes) != len(args.recipe):
        print("promem bench generalize: --recipe takes NAME=YAML, e.g. --recipe gate=my_gate.yaml", file=sys.stderr)
        return 2
    settings = Settings(folds=args.folds, n_train=args.n_train or cfg.training.train_instances, n_test=args.n_test,
                        seed=cfg.training.seed if args.seed is None else args.seed, systems=systems,
                        judge=args.judge, workers=args.workers or cfg.bench.workers,
                        recipes={k: str(Path(v).absolute()) for k, v in recipes.items()})
    try:
        report = run_generalize(cfg, settings, args.output)
    except (GeneralizeError, UnknownBackend, TrainingError) as exc:
        print(f"promem bench generalize: {exc}", file=sys.stderr)
        return 2
    for system, m in report.mean.items():
        print(f"{system} (mean of {len(report.folds)} folds): "
              + ", ".join(f"{k} {'-' if v is None else v}" for k, v in m.items())
              + f"; worst-fold FD {report.worst_fd[system]}")
    print(f"report: {args.output}/generalize.json, {args.output}/generalize.md ({report.wall_s:.0f} s)")
    broken = [(f.held_out, what) for f in report.folds for what in f.errors]
    if broken:
        print(f"promem bench generalize: {len(broken)} fold part(s) not run (see generalize.md); "
              "rerun to retry them", file=sys.stderr)
        return 1
    return 0
