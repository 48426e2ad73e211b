"""`promem` entry point.

Subcommands are discovered from the modules of this package: a module defines
`register(subparsers)` and is listed only when it imports, so the help never shows a
command whose stage is not installed.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

import cli
from core.config import DEFAULT_CONFIG, ConfigError, load_config

ORDER = ["demo", "sample_clips", "perceive", "remember", "recall", "intentions", "brief", "reflect", "decide", "run", "train",
         "serve", "bench"]


def positive_int(text: str) -> int:
    """argparse type for counts: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--config", default=str(DEFAULT_CONFIG), help="profile YAML (default: configs/cpu.yaml)")


def config_from(args: argparse.Namespace):
    try:
        return load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(f"promem: config error: {exc}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="promem",
        description="promemagent: a proactive memory assistant for wearables.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = [m.name for m in pkgutil.iter_modules(cli.__path__) if m.name not in ("main",) and not m.name.startswith("_")]
    names.sort(key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    for name in names:
        module = importlib.import_module(f"cli.{name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("promem: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
