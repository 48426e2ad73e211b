"""`promem bench generate`: synthetic CPMBench timelines from the scenario seeds."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("generate", help="write synthetic CPMBench timelines (every seeded category x 4 variants)")
    p.add_argument("-o", "--output", required=True, help="JSON Lines file to write")
    p.add_argument("--n", type=int, default=400, help="number of instances (balanced over categories and variants)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same file)")
    p.add_argument("--split", choices=["train", "test"], default="train", help="which scenario seeds to use")
    p.add_argument("--seeds-dir", default=None, help="folder of <category>.yaml seed files (default: the bundled seeds)")
    p.set_defaults(func=run)


def run(args) -> int:
    from bench.generator.engine import iter_generate
    from bench.generator.seeds import SEEDS_DIR, SeedError
    from core.jsonio import atomic_write_text

    try:
        rows = [json.dumps(inst.dump(), ensure_ascii=False) + "\n"
                for inst in iter_generate(args.n, args.seed, args.split, seeds_dir=args.seeds_dir or SEEDS_DIR,
                                          progress=True)]
    except (SeedError, ValueError) as exc:
        print(f"promem bench generate: {exc}", file=sys.stderr)
        return 1
    atomic_write_text(Path(args.output), "".join(rows))
    variants = Counter(json.loads(r)["variant"] for r in rows)
    print(f"wrote {len(rows)} {args.split} instances to {args.output} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(variants.items()))})")
    return 0
