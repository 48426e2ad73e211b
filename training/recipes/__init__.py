"""Training recipes, torchtune-style: each module is self-contained and driven by a YAML in training/configs/.

A recipe defines NAME (the `promem train` subcommand), add_args(parser) and run(args, cfg) -> int.
"""
