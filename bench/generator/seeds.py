"""Loading and checking scenario seeds, and the train/test split by seed id."""
from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import yaml
from pydantic import ValidationError

from bench.generator.schema import Seed, Slot
from bench.generator.text import ROLES, fill, keywords_match, placeholders
from core.formats import describe_validation_error

SEEDS_DIR = Path(__file__).resolve().parent / "seeds"
TEST_SHARE = 30  # percent of seeds held out for the test split


def split_of(seed_id: str) -> str:
    """'train' or 'test', from a hash of the id alone, so adding seeds never moves an existing one."""
    h = int.from_bytes(hashlib.sha256(seed_id.encode("utf-8")).digest()[:8], "big")
    return "test" if h % 100 < TEST_SHARE else "train"


class SeedError(ValueError):
    pass


# every seed offers at least this many hard near misses, of at least this many kinds, so a negative can
# end on a place of the right kind, an untakeable chance, or someone else's need
MIN_HARD_NEAR_MISSES, MIN_NEAR_MISS_KINDS = 2, 2
# whether load_seeds enforces that rule and an indirect state change for every intention
REQUIRE_BREADTH = True
# timestamps decide the weekday; a weekday in a seed's text would contradict them
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.IGNORECASE)


def _slots(seed: Seed) -> list[tuple[str, Slot]]:
    out = [("opportunity", seed.opportunity), ("near_miss", seed.near_miss)]
    out += [(f"hard_near_misses[{i}]", s) for i, s in enumerate(seed.hard_near_misses)]
    for i, it in enumerate(seed.intentions):
        out += [(f"intentions[{i}].formation", it.formation), (f"intentions[{i}].state_change", it.state_change)]
        if it.indirect_state_change:
            out.append((f"intentions[{i}].indirect_state_change", it.indirect_state_change))
    out += [(f"confusers[{i}]", c) for i, c in enumerate(seed.confusers)]
    return out


def breadth_problems(seed: Seed) -> list[str]:
    """What the seed lacks of the breadth rules: hard near misses of several kinds, indirect changes."""
    out = []
    kinds = sorted({h.kind for h in seed.hard_near_misses})
    if len(seed.hard_near_misses) < MIN_HARD_NEAR_MISSES or len(kinds) < MIN_NEAR_MISS_KINDS:
        out.append(f"needs at least {MIN_HARD_NEAR_MISSES} hard_near_misses of at least {MIN_NEAR_MISS_KINDS} "
                   f"kinds (wrong_place, no_chance, other_person); has {len(seed.hard_near_misses)}"
                   + (f" ({', '.join(kinds)})" if kinds else ""))
    for i, it in enumerate(seed.intentions):
        if it.indirect_state_change is None:
            out.append(f"intention {i + 1} has no indirect_state_change (its state change told without naming it)")
    return out


def check_seed(seed: Seed, where: str, require_breadth: bool = REQUIRE_BREADTH) -> None:
    """Rules a YAML schema cannot state: known roles only; every reference satisfies its own keywords;
    no weekday names; with require_breadth, the breadth rules (breadth_problems)."""
    if require_breadth and (missing := breadth_problems(seed)):
        raise SeedError(f"{where} (seed {seed.id}): " + "; ".join(missing))
    texts = [it.reference for it in seed.intentions] + [k for it in seed.intentions for g in it.keywords for k in g]
    for _, slot in _slots(seed):
        texts += slot.visual + slot.audio + slot.location
    for t in texts:
        if m := _WEEKDAY.search(t):
            raise SeedError(f"{where} (seed {seed.id}): names a weekday ({m.group(0)!r} in {t!r}); the "
                            "timestamps decide the weekday, write 'tomorrow', 'this weekend' or 'in two days'")
    unknown = set().union(*(placeholders(t) for t in texts)) - set(ROLES)
    if unknown:
        raise SeedError(f"{where} (seed {seed.id}): unknown placeholder(s) {sorted(unknown)}; roles are {', '.join(ROLES)}")
    roles = {r: r.capitalize() for r in ROLES}
    for i, it in enumerate(seed.intentions):
        # every alternative of the reference must be judged as addressing the intention
        for trial in range(8):
            ref = fill(it.reference, roles, random.Random(trial), where)
            kws = [[fill(k, roles, random.Random(trial), where) for k in g] for g in it.keywords]
            if not keywords_match(ref, kws):
                raise SeedError(f"{where} (seed {seed.id}): intention {i + 1} reference {ref!r} fails its keywords {kws}")


def load_seeds(folder: str | Path = SEEDS_DIR, require_breadth: bool = REQUIRE_BREADTH) -> list[Seed]:
    """All seeds of all <category>.yaml files, in file order; duplicate ids and bad seeds are errors."""
    folder = Path(folder)
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise SeedError(f"no seed files (*.yaml) in {folder}")
    seeds: list[Seed] = []
    seen: dict[str, str] = {}
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if not isinstance(data, list):
            raise SeedError(f"{path}: expected a YAML list of seeds")
        for n, obj in enumerate(data, start=1):
            where = f"{path}: seed #{n}"
            try:
                seed = Seed.model_validate(obj)
            except ValidationError as exc:
                ident = obj.get("id") if isinstance(obj, dict) else None
                raise SeedError(f"{where} ({ident}): {describe_validation_error(exc)}") from None
            if seed.id in seen:
                raise SeedError(f"{where}: duplicate seed id {seed.id!r} (also in {seen[seed.id]})")
            check_seed(seed, where, require_breadth)
            seen[seed.id] = str(path)
            seeds.append(seed)
    return seeds
