"""Training recipes, torchtune-style: each module is self-contained and driven by a YAML in training/configs/.

A recipe defines NAME (the `promem train` subcommand), add_args(parser) and run(args, cfg) -> int,
and raises training.errors.TrainingError for bad input (`promem train` prints it and exits 2).
Shared plumbing (recipe YAML, paths) is in training/recipe.py; the data in training/data.py.
"""
