"""generate(n, seed, split): balanced, deterministic CPMBench timelines from the scenario seeds."""
from __future__ import annotations

import hashlib
import logging
import random
from pathlib import Path
from typing import Collection, Iterator, Optional

from tqdm import tqdm

from bench.generator.pools import POOLS_DIR, load_pools
from bench.generator.schema import Seed, Slot
from bench.generator.seeds import SEEDS_DIR, load_seeds, split_of
from bench.generator.timeline import build_instance
from core.formats import CATEGORIES, VARIANTS, Instance

log = logging.getLogger(__name__)
SPLITS = ("train", "test")
ALL = "all"  # both splits' seeds: only for categories no model was trained on (bench/generalize.py)


def _rng(*parts) -> random.Random:
    """An independent stream per (run seed, split, instance), so instance i never depends on n."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def seeds_for(split: str, seeds_dir: str | Path = SEEDS_DIR,
              categories: Optional[Collection[str]] = None) -> dict[str, list[Seed]]:
    """Seeds of one split (or of both, split "all"), by category (categories without seeds are
    left out); `categories`: only these."""
    if split not in (*SPLITS, ALL):
        raise ValueError(f"split must be one of {(*SPLITS, ALL)}, got {split!r}")
    if categories is not None:
        unknown = sorted(set(categories) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {unknown}; "
                             f"known: {', '.join(CATEGORIES)}")
    by_cat: dict[str, list[Seed]] = {}
    for s in load_seeds(seeds_dir):
        if (split == ALL or split_of(s.id) == split) and (categories is None or s.category in categories):
            by_cat.setdefault(s.category, []).append(s)
    return {c: by_cat[c] for c in CATEGORIES if c in by_cat}


def seed_categories(seeds_dir: str | Path = SEEDS_DIR) -> list[str]:
    """The categories that have seeds (either split), in core.formats.CATEGORIES order."""
    return list(seeds_for(ALL, seeds_dir))


def _confusables(seeds: list[Seed], exclude: str) -> list[Slot]:
    """Other seeds' near misses (hard ones too) and confusers: events that look like an intention's
    business; build_instance leaves out those naming its own seed's objects."""
    out: list[Slot] = []
    for s in seeds:
        if s.id != exclude:
            out.append(s.near_miss)
            out.extend(s.hard_near_misses)
            out.extend(s.confusers)
    return out


def iter_generate(n: int, seed: int = 0, split: str = "train", seeds_dir: str | Path = SEEDS_DIR,
                  pools_dir: str | Path = POOLS_DIR, progress: bool = False,
                  categories: Optional[Collection[str]] = None) -> Iterator[Instance]:
    """With C categories having seeds, instance i = C*a + b has category b and variant (a + b) mod 4:
    every 4*C in a row cover each (category, variant) cell once, so any n is balanced.

    categories: only the seeds of these categories, for the timelines and for their confusable
    distractors alike (so no text of another category's seeds appears); None: every category."""
    if n < 0:
        raise ValueError("n must be >= 0")
    by_cat = seeds_for(split, seeds_dir, categories)
    if not by_cat:
        raise ValueError(f"no seeds in the {split} split" + (f" for {sorted(categories)}" if categories else ""))
    missing = [c for c in (CATEGORIES if categories is None else categories) if c not in by_cat]
    if missing:
        log.warning("%s split has no seeds for %s; those categories are skipped", split, ", ".join(missing))
    cats = list(by_cat)
    pools = load_pools(pools_dir)
    split_seeds = [s for ss in by_cat.values() for s in ss]
    # a fixed shuffled order of seeds per category, walked round-robin so every seed is used evenly
    orders = {c: _rng(seed, split, "order", c).sample(ss, len(ss)) for c, ss in by_cat.items()}
    for i in tqdm(range(n), desc=f"generate {split}", unit="inst", disable=not progress):
        cat = cats[i % len(cats)]
        variant = VARIANTS[(i // len(cats) + i % len(cats)) % len(VARIANTS)]
        round_ = i // (len(cats) * len(VARIANTS))
        order = orders[cat]
        # round r uses seed r of the category for all four variants: contrastive sets from one scenario
        s = order[round_ % len(order)]
        yield build_instance(s, variant, i, _rng(seed, split, i), pools, _confusables(split_seeds, s.id))


def generate(n: int, seed: int = 0, split: str = "train", **kw) -> list[Instance]:
    return list(iter_generate(n, seed, split, **kw))
