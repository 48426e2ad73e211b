"""Subcommands of `promem bench`; each module defines register(subparsers)."""
