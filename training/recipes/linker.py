"""Train the linker: a state-change classifier over (earlier event, later event) MiniLM features.

Positives are (formation, state change) pairs of CPMBench train instances; negatives are
(formation, another later event, including the decision moment) and (another earlier event,
state change). An intention detector (formation events vs the rest) is trained beside it.
Both are logistic regressions. The link threshold is chosen for the best F1 of the links that
construction would make on held-out timelines: every event against its top-m earlier events,
the likeliest one linked. (Chosen on sampled pairs instead, it was 0.85; construction then made
about two false links per timeline, 9% precision, and each one dismissed an open intention.)
Writes linker.joblib and meta.json to <cfg.training.artifacts>/linker.
"""
from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict

from core.config import resolve_path
from core.jsonio import atomic_write_json, replace_dir
from memory.construct.artifacts import LINKER_FILE
from memory.construct.features import intent_features, pair_features
from training.recipes import _memory_data as data

NAME = "linker"
VERSION = 1
DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "configs" / "linker.yaml"
log = logging.getLogger(__name__)


class LinkerRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    negatives: int = 4
    intent_negatives: int = 4
    C: float = 1.0
    held_out: float = 0.2
    min_threshold: float = 0.3
    threads: int = 2
    seed: int = 0


def add_args(p) -> None:
    p.add_argument("--data", help="CPMBench train instances (default: training.train_data)")
    p.add_argument("--out", help="artifact folder (default: <training.artifacts>/linker)")
    p.add_argument("--recipe", help="recipe YAML (default: training/configs/linker.yaml)")


def load_recipe(path=None, **overrides) -> LinkerRecipe:
    path = Path(path) if path else DEFAULT_RECIPE
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return LinkerRecipe.model_validate(raw)
    except Exception as exc:
        raise SystemExit(f"promem train {NAME}: {path}: {exc}") from None


def _prf(y: np.ndarray, p: np.ndarray, t: float) -> tuple[float, float, float]:
    return _link_prf(p, y == 1, int((y == 1).sum()), t)


def timeline_links(clf, instances, vec, m: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Each event against its m most similar earlier events, as construction links: per event the
    likeliest candidate's probability and whether that pair is a gold state change; plus the
    number of gold state changes."""
    probs, hits, n_gold = [], [], 0
    for inst in instances:
        evs = sorted(inst.events, key=lambda e: e.dt)
        gold = {(i.formation, i.state_change) for i in inst.intentions if i.state_change}
        n_gold += len(gold)
        V = np.vstack([vec[e.text()] for e in evs])
        for j in range(1, len(evs)):
            cand = np.argsort(-(V[:j] @ V[j]))[:m]
            p = clf.predict_proba(pair_features(V[cand], np.tile(V[j], (len(cand), 1))))[:, 1]
            b = int(np.argmax(p))
            probs.append(float(p[b]))
            hits.append((evs[cand[b]].id, evs[j].id) in gold)
    return np.array(probs), np.array(hits, dtype=bool), n_gold


def _link_prf(probs: np.ndarray, hits: np.ndarray, n_gold: int, t: float) -> tuple[float, float, float]:
    """Precision, recall, F1 of what scores >= t, when `hits` marks the right ones among n_gold."""
    made = probs >= t
    tp = float((made & hits).sum())
    prec = tp / max(1.0, float(made.sum()))
    rec = tp / max(1.0, float(n_gold))
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def _fit(X, y, C, seed):
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        raise SystemExit(f"promem train {NAME}: the training data needs both positive and negative examples")
    return LogisticRegression(C=C, max_iter=2000, class_weight="balanced", random_state=seed).fit(X, y)


def train(instances, out: Path, r: LinkerRecipe, embed_cfg, source: str = "", data_hash: str = "",
          link_candidates: int = 8) -> dict:
    """link_candidates: m, the earlier events construction compares each new event with."""
    import joblib
    import torch
    from tqdm import tqdm

    from core.providers import build_embedder

    torch.set_num_threads(r.threads)
    t0 = time.time()
    tr, val = data.split(instances, r.held_out, r.seed)
    emb = build_embedder(embed_cfg)
    sets = {name: data.link_examples(part, r.negatives, r.seed) for name, part in (("train", tr), ("val", val))}
    intents = {name: data.intent_examples(part, r.intent_negatives, r.seed) for name, part in (("train", tr), ("val", val))}
    texts = sorted({t for ex in sets.values() for e in ex for t in (e.earlier, e.later)}
                   | {t for ex in intents.values() for t, _ in ex} | {e.text() for inst in val for e in inst.events})
    vec = {}
    for s in tqdm(range(0, len(texts), 256), desc=f"train {NAME}: embed", unit="batch"):
        chunk = texts[s:s + 256]
        vec.update(zip(chunk, emb.encode(chunk)))

    def xy(ex):
        if not ex:
            return np.zeros((0, 4 * emb.dim + 1), np.float32), np.zeros(0, int)
        return (pair_features(np.vstack([vec[e.earlier] for e in ex]), np.vstack([vec[e.later] for e in ex])),
                np.array([e.label for e in ex]))

    Xtr, ytr = xy(sets["train"])
    clf = _fit(Xtr, ytr, r.C, r.seed)
    Xv, yv = xy(sets["val"])
    grid = sorted({*np.linspace(0.05, 0.95, 19).round(2), 0.96, 0.97, 0.98, 0.99})
    grid = [t for t in grid if t >= r.min_threshold]
    probs, hits, n_gold = timeline_links(clf, val, vec, link_candidates)
    if n_gold >= 3:
        threshold = max(grid, key=lambda t: (round(_link_prf(probs, hits, n_gold, t)[2], 9), t))
        p, rec, f1 = _link_prf(probs, hits, n_gold, threshold)
        chosen_on = "held-out timelines"
    else:  # too few held-out state changes to choose on: best F1 over the training pairs
        pc = clf.predict_proba(Xtr)[:, 1]
        threshold = max(grid, key=lambda t: (_prf(ytr, pc, t)[2], t))
        p, rec, f1 = _prf(ytr, pc, threshold)
        chosen_on = "train pairs"
    pair_p, pair_r, _ = _prf(yv, clf.predict_proba(Xv)[:, 1], threshold) if len(yv) else (None, None, None)

    ix = [np.vstack([vec[t] for t, _ in intents[n]]) if intents[n] else np.zeros((0, emb.dim)) for n in ("train", "val")]
    iy = [np.array([y for _, y in intents[n]]) for n in ("train", "val")]
    intent = _fit(intent_features(ix[0]), iy[0], r.C, r.seed)
    ip = _prf(iy[1], intent.predict_proba(intent_features(ix[1]))[:, 1], 0.5) if len(iy[1]) else (None,) * 3

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    joblib.dump({"state_change": clf, "intent": intent, "threshold": float(threshold), "version": VERSION},
                tmp / LINKER_FILE)
    meta = {
        "name": NAME, "version": VERSION, "data": source, "data_hash": data_hash, "embedder": embed_cfg.backend,
        "threshold": float(threshold), "seconds": round(time.time() - t0, 1), "recipe": r.model_dump(),
        "pairs": {"train": len(sets["train"]), "held_out": len(sets["val"]),
                  "train_positives": int(ytr.sum()), "held_out_positives": int(yv.sum())},
        "metrics": {"threshold_chosen_on": chosen_on,
                    "state_change_precision": p, "state_change_recall": rec, "state_change_f1": f1,
                    "held_out_pair_precision": pair_p, "held_out_pair_recall": pair_r,
                    "intent_precision": ip[0], "intent_recall": ip[1], "intent_f1": ip[2]},
    }
    atomic_write_json(tmp / "meta.json", meta)
    replace_dir(tmp, out)
    return meta


def run(args, cfg) -> int:
    r = load_recipe(args.recipe)
    src = resolve_path(args.data or cfg.training.train_data)
    out = Path(args.out) if args.out else resolve_path(cfg.training.artifacts) / "linker"
    meta = train(data.load(src), out, r, cfg.memory.embedder, str(src), data.data_hash(src),
                 cfg.memory.construction.link_candidates)
    m = meta["metrics"]
    print(f"linker -> {out}: {meta['pairs']['train']} pairs ({meta['pairs']['train_positives']} state changes) "
          f"in {meta['seconds']} s; threshold {meta['threshold']:.2f} ({m['threshold_chosen_on']}): "
          f"P {m['state_change_precision']:.2f} R {m['state_change_recall']:.2f} F1 {m['state_change_f1']:.2f}")
    return 0
