"""The one error a recipe raises for bad input (data, recipe YAML, a model it cannot load):
`promem train` prints its message and exits 2; the recipes never exit on their own."""


class TrainingError(ValueError):
    pass
