"""`promem bench import locomo-plus|cab`: the public benchmark data as CPMBench files."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tqdm import tqdm


def register(sub) -> None:
    from bench.importers import DATA_ENV, DEFAULT_DIR

    p = sub.add_parser("import", help="convert public data (LoCoMo-Plus, CAB) into CPMBench files")
    p.add_argument("dataset", choices=["locomo-plus", "cab"], help="which dataset")
    p.add_argument("--split", choices=["test", "train"], default="test", help="CAB split (default test)")
    p.add_argument("--src", metavar="DIR", help=f"folder of the public data files (default: ${DATA_ENV}, "
                                                f"else {DEFAULT_DIR} under the current directory)")
    p.add_argument("-o", "--output", required=True, help="JSON Lines file to write")
    p.set_defaults(func=run)


def _open_atomic(path: Path):
    """A temp file beside `path`, renamed over it only when complete (the LoCoMo-Plus file is ~45 MB,
    so rows are streamed rather than joined in memory as core.jsonio's writers do)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    return os.fdopen(fd, "w", encoding="utf-8"), tmp


def run(args) -> int:
    from bench.importers import ImportError_, cab, locomo_plus

    items = locomo_plus.iter_load(args.src) if args.dataset == "locomo-plus" else cab.iter_load(args.split, args.src)
    out = Path(args.output)
    fh, tmp = _open_atomic(out)
    variants: Counter = Counter()
    skipped = dropped = 0
    try:
        with fh:
            for item in tqdm(items, desc=f"import {args.dataset}", unit="inst"):
                if item is None:
                    dropped += 1
                elif isinstance(item, str):
                    skipped += 1
                    print(f"promem bench import: skipped {item}", file=sys.stderr)
                else:
                    fh.write(json.dumps(item.dump(), ensure_ascii=False) + "\n")
                    variants[item.variant] += 1
            fh.flush()
            os.fsync(fh.fileno())
        if not variants:
            print("promem bench import: nothing to write", file=sys.stderr)
            return 1
        os.replace(tmp, out)
    except ImportError_ as exc:
        print(f"promem bench import: {exc}", file=sys.stderr)
        return 1
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    n = sum(variants.values())
    extra = f", {dropped} dropped (medium)" if dropped else ""
    print(f"wrote {n} instances to {args.output} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(variants.items()))}{extra}; {skipped} skipped)")
    return 0
