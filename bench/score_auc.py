"""How well the gate's score ranks the moments, whatever the threshold: the AUC of `gate_score` for
positive decision moments against each kind of moment that calls for silence, read from a
`promem bench run` result file. A threshold moves FD and recall together; this does not.

    python -m bench.score_auc runs/bench/independent.promem.json [more result files]
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bench.metrics import SILENT_VARIANTS


def auc(pos: list[float], neg: list[float]) -> Optional[float]:
    """P(a positive scores above a negative), ties counted half; None without both kinds."""
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@dataclass(frozen=True)
class ScoreAuc:
    file: str
    all_silent: Optional[float]
    by_variant: dict[str, Optional[float]]

    def line(self) -> str:
        fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        parts = " ".join(f"{v} {fmt(a)}" for v, a in self.by_variant.items())
        return f"{self.file}: AUC {fmt(self.all_silent)} ({parts})"


def score_auc(path: Path) -> ScoreAuc:
    scores: dict[str, list[float]] = {}
    for row in json.loads(path.read_text())["instances"]:
        # a moment the gate never scored (nothing recalled) ranks lowest
        scores.setdefault(row["variant"], []).append(float(row["decision"].get("gate_score") or 0.0))
    pos = scores.get("positive", [])
    silent = [s for v in SILENT_VARIANTS for s in scores.get(v, [])]
    return ScoreAuc(str(path), auc(pos, silent), {v: auc(pos, scores.get(v, [])) for v in SILENT_VARIANTS})


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.score_auc", description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+", help="result files of `promem bench run` (one system each)")
    for path in ap.parse_args(argv).results:
        print(score_auc(path).line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
