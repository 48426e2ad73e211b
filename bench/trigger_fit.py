"""Choosing the context trigger's thresholds (memory.trigger) on training data only, cross-fitted.

For each fold of a `promem bench generalize` run, the fold's models (trained without its held-out
categories) replay positive TRAIN-split timelines of the held-out categories (generation seed of the run's
training timelines, so none is a fold's test timeline). At each decision moment it records the
trigger's measurements (content words, cue cosine to the nearest open intention, top cue score) and
whether promem with the trigger off speaks there; at each ordinary moment
(bench.metrics.ordinary_events) the same measurements as of that moment. A grid over the thresholds
then reports, per setting, the share of those spoken positive decisions kept and the share of ordinary
moments skipped, and picks the setting that skips the most while keeping at least --keep of them.

    python -m bench.trigger_fit runs/generalize-reduced --per-category 16 -o runs/trigger_fit.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from pydantic import BaseModel
from tqdm import tqdm

from core.config import Config, load_config
from core.formats import Instance
from core.jsonio import atomic_write_json


class Moment(BaseModel):
    fold: str
    instance: str
    kind: str  # "decision" | "ordinary"
    variant: str
    words: int
    similarity: Optional[float]
    cue_score: Optional[float]
    spoke: bool = False  # decision moments of positive timelines: promem (trigger off) spoke there


def measure_fold(cfg: Config, fold_dir: Path, held_out: list[str], per_category: int, seed: int) -> list[Moment]:
    from bench.generalize import fold_config, fold_models
    from bench.generator.engine import generate
    from bench.metrics import ordinary_events
    from memory.api import open_memory
    from memory.retrieve import query_vectors
    from memory.trigger import content_word_count, similarity, top_cue_score, verdicts_as_of
    from reasoner.api import build_reasoner

    fcfg = fold_config(cfg, fold_models(cfg, fold_dir / "artifacts"), fold_dir, fold_dir / "fit-cache")
    fcfg.memory.trigger.min_content_words = 0  # measure every moment; the grid applies the word rule
    reasoner = build_reasoner(fcfg)
    out: list[Moment] = []
    # positive timelines only: their decision moments are what the trigger must keep, and their
    # ordinary events are as routine as any other variant's
    insts = [i for i in generate(4 * per_category * len(held_out), seed, "train", categories=held_out)
             if i.variant == "positive"]
    for inst in tqdm(insts, desc=f"fit {fold_dir.name}", unit="inst"):
        past, current = inst.events[:-1], inst.events[-1]
        with open_memory(fcfg, None, user_id=inst.id) as mem:
            mem.add_many(list(past))
            vecs = query_vectors(mem, current)
            d = reasoner.decide(inst.persona, list(mem.retrieve(current, vectors=vecs)), current)
            out.append(Moment(fold=fold_dir.name, instance=inst.id, kind="decision", variant=inst.variant,
                              words=content_word_count(current), similarity=similarity(mem, current, vecs[1]),
                              cue_score=top_cue_score(mem, current, vecs[1]), spoke=d.assist))
            ordinary = ordinary_events(inst, past)
            for e, v in zip(ordinary, verdicts_as_of(mem, ordinary)):
                out.append(Moment(fold=fold_dir.name, instance=inst.id, kind="ordinary", variant=inst.variant,
                                  words=v.words, similarity=v.similarity, cue_score=v.cue_score))
    return out


def replay(cfg: Config, insts: list[Instance], judge) -> dict:
    """One pass over a data file with the config's models: promem's decisions with the trigger off, and
    the same with the trigger on as the harness makes them (a skipped moment is silence with nothing
    retrieved; every other decision is the same, since the trigger only reads memory). Returns both
    runs' metrics and the trigger's skip shares, and the measurements for the grid."""
    from bench.metrics import compute_metrics, ordinary_events, retrieval_counts
    from core.formats import Decision
    from memory.api import open_memory
    from memory.retrieve import query_vectors
    from memory.trigger import check, verdicts_as_of
    from reasoner.api import build_reasoner

    reasoner = build_reasoner(cfg)
    off, on, moments = [], [], []
    n_ord = n_skip = 0
    for inst in tqdm(insts, desc="replay", unit="inst"):
        past, current = inst.events[:-1], inst.events[-1]
        with open_memory(cfg, None, user_id=inst.id) as mem:
            mem.add_many(list(past))
            verdict, vecs = check(mem, current)
            vecs = vecs or query_vectors(mem, current)
            d = reasoner.decide(inst.persona, list(mem.retrieve(current, vectors=vecs)), current)
            ordinary = ordinary_events(inst, past)
            ov = verdicts_as_of(mem, ordinary)
        n_ord += len(ordinary)
        n_skip += sum(not v.needed for v in ov)
        off.append(d)
        on.append(d if verdict.needed else Decision(event_id=current.id, assist=False, retrieved=[],
                                                    trigger=verdict.reason))
    result = {}
    for name, decs in (("off", off), ("on", on)):
        judged = [judge.judge(i, d) for i, d in zip(insts, decs)]
        m = compute_metrics(insts, decs, judged)
        counts = {k: sum(retrieval_counts(i, d)[k] for i, d in zip(insts, decs)) for k in ("dir_hit", "dir_n", "scr_hit", "scr_n")}
        counts |= {k: m["extra"][k] for k in ("n", "TP", "FN", "FP", "TN")}
        result[name] = {"metrics": m["metrics"], "counts": counts, "trigger_skip_share": m["extra"]["trigger_skip_share"]}
    result["on"]["trigger_ordinary_skip_share"] = round(100 * n_skip / max(n_ord, 1), 2)
    result["ordinary_moments"], result["ordinary_skipped"] = n_ord, n_skip
    return result


def needed(m: Moment, words: int, sim: float, top: float) -> bool:
    """memory.trigger.rule on recorded measurements."""
    return m.words >= words and ((m.similarity is not None and m.similarity >= sim)
                                 or (m.cue_score is not None and m.cue_score >= top))


def grid(moments: list[Moment], keep: float) -> dict:
    right = [m for m in moments if m.kind == "decision" and m.spoke]
    ordinary = [m for m in moments if m.kind == "ordinary"]
    rows = []
    for words in range(0, 5):
        for sim in [x / 100 for x in range(0, 100, 5)]:
            for top in [x / 100 for x in range(30, 101, 2)]:
                kept = sum(needed(m, words, sim, top) for m in right) / max(len(right), 1)
                skip = sum(not needed(m, words, sim, top) for m in ordinary) / max(len(ordinary), 1)
                rows.append({"min_content_words": words, "min_similarity": sim, "min_cue_score": top,
                             "spoke_kept": round(100 * kept, 2), "ordinary_skipped": round(100 * skip, 2)})
    ok = [r for r in rows if r["spoke_kept"] >= 100 * keep]
    # most skipped; among equals the lowest thresholds (the most conservative setting)
    best = max(ok, key=lambda r: (r["ordinary_skipped"], -r["min_cue_score"], -r["min_similarity"],
                                  -r["min_content_words"])) if ok else None
    return {"positives": sum(m.kind == "decision" for m in moments), "spoke_positives": len(right),
            "ordinary_moments": len(ordinary), "keep": keep, "best": best,
            "pareto": sorted({r["spoke_kept"]: r for r in sorted(rows, key=lambda r: r["ordinary_skipped"])}.values(),
                             key=lambda r: -r["spoke_kept"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.trigger_fit", description=__doc__.split("\n\n")[0])
    ap.add_argument("generalize", help="output folder of a `promem bench generalize` run (its fold models)")
    ap.add_argument("-c", "--config", default=None, help="profile YAML (default: configs/cpu.yaml)")
    ap.add_argument("--per-category", type=int, default=16, help="positive train-split timelines per held-out category")
    ap.add_argument("--keep", type=float, default=0.99, help="share of the positive moments promem speaks at to keep")
    ap.add_argument("-o", "--output", default="runs/trigger_fit.json")
    ap.add_argument("--data", default=None,
                    help="instead: replay this data file with the config's models and trigger settings, "
                         "reporting promem's metrics with the trigger off and on (never used to choose thresholds)")
    args = ap.parse_args(argv)
    from bench.generalize import FOLD_FILE, FoldResult
    from bench.judges import build_judge

    cfg = load_config(args.config)
    judge = build_judge(cfg, None)
    if args.data:
        from core.formats import read_records

        good, bad = read_records(Path(args.data), Instance)
        result = {"data": args.data, "trigger": cfg.memory.trigger.model_dump(),
                  **replay(cfg, [i for _, i in good], judge)}
        atomic_write_json(Path(args.output), result)
        print(json.dumps(result, indent=1))
        return 0
    root = Path(args.generalize)
    cache = Path(args.output).with_suffix(".moments.jsonl")
    moments = [Moment.model_validate_json(x) for x in cache.read_text().splitlines()] if cache.is_file() else []
    have = {m.fold for m in moments}
    report_file = root / "generalize.json"  # the run's seed of the training timelines
    seed = json.loads(report_file.read_text())["settings"]["seed"] if report_file.is_file() else 0
    for fold_file in sorted((root / "folds").glob(f"*/{FOLD_FILE}")):
        fold = FoldResult.model_validate_json(fold_file.read_text(encoding="utf-8"))
        name = fold_file.parent.name
        if name in have or "train" in fold.errors:
            continue
        new = measure_fold(cfg, fold_file.parent, fold.held_out, args.per_category, seed)
        with cache.open("a", encoding="utf-8") as f:  # a rerun resumes with the folds measured so far
            f.writelines(m.model_dump_json() + "\n" for m in new)
        moments += new
    if not moments:
        print(f"no fold with trained models under {root}/folds", file=sys.stderr)
        return 2
    report = {"folds": sorted({m.fold for m in moments}), **grid(moments, args.keep)}
    atomic_write_json(Path(args.output), report)
    print(json.dumps({k: report[k] for k in ("folds", "positives", "spoke_positives", "ordinary_moments", "best")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
