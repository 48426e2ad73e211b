"""CPMBench timeline generator: scenario seeds (seeds/*.yaml) + pools -> balanced instances."""
from bench.generator.engine import generate, iter_generate, seed_categories, seeds_for
from bench.generator.seeds import load_seeds, split_of

__all__ = ["generate", "iter_generate", "seeds_for", "seed_categories", "load_seeds", "split_of"]
