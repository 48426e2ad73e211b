"""`promem bench ...`: evaluation commands, one module each in cli/bench_cmds/."""
from __future__ import annotations

import importlib
import pkgutil

import cli.bench_cmds as cmds


def register(sub) -> None:
    mods = [m.name for m in sorted(pkgutil.iter_modules(cmds.__path__), key=lambda m: m.name) if not m.name.startswith("_")]
    if not mods:
        return  # no bench command exists yet: show none
    p = sub.add_parser("bench", help="benchmark: validate, generate, import, run, measure")
    bsub = p.add_subparsers(dest="bench_command", metavar="BENCH_COMMAND")
    for name in mods:
        importlib.import_module(f"{cmds.__name__}.{name}").register(bsub)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
