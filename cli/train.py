"""`promem train RECIPE`: runs a training recipe from training/recipes/ with its YAML config."""
from __future__ import annotations

import importlib
import pkgutil
import sys

import training.recipes as recipes
from cli.main import add_config_arg, config_from
from training.errors import TrainingError


def _run(mod, args) -> int:
    """A recipe's bad input (data, recipe YAML, a model it cannot load) ends in its message and exit code 2."""
    try:
        return mod.run(args, config_from(args))
    except TrainingError as exc:
        print(f"promem train {mod.NAME}: {exc}", file=sys.stderr)
        return 2


def register(sub) -> None:
    mods = [importlib.import_module(f"{recipes.__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(recipes.__path__), key=lambda m: m.name) if not m.name.startswith("_")]
    if not mods:
        return
    p = sub.add_parser("train", help="train the small on-device models (recipes in training/recipes)")
    rsub = p.add_subparsers(dest="recipe", metavar="RECIPE")
    for mod in mods:
        rp = rsub.add_parser(mod.NAME, help=mod.__doc__.strip().splitlines()[0])
        add_config_arg(rp)
        mod.add_args(rp)
        rp.set_defaults(func=lambda args, mod=mod: _run(mod, args))
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
