"""Train the linker: does a later event change an earlier one's intention? (memory.construct.link_model)

Positives are (formation, state change) pairs of CPMBench train instances. Negatives are the
other pairs that construction scores on the training timelines (every event against its m most
similar earlier events), plus sampled ones: (formation, another later event, including the
decision moment) and (another earlier event, state change). The replayed pairs are the ones the
linker meets at construction time, so it learns to tell those apart, not only sampled ones.

Two event classifiers come first: "intent" (formation events vs every other event) and "change"
(state-change events vs every other event); their scores on the training pairs are cross-fitted
over scenario folds, so that the pair model learns how far to trust them on scenarios they were
not trained on. The intent threshold (an event at or above it is stored as an intention) is the
best F1 on held-out events. The link threshold is chosen for the best F1 of the links that
construction would make on held-out timelines: every event against its top-m earlier events, the
likeliest one linked. Writes linker.joblib and meta.json to <cfg.training.artifacts>/linker.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from core.artifacts import ArtifactMeta, cue_fingerprint, write_meta
from core.jsonio import replace_dir, staging_dir
from memory.construct.artifacts import LINKER_FILE, cue_encoder
from memory.construct.artifacts import LINKER_VERSION as VERSION
from memory.construct.link_model import LinkModel, link_features
from training import data, roles
from training import recipe as common
from training.errors import TrainingError

NAME = "linker"
ROLES = ("formation", "state_change")  # LinkModel's intent and change
log = logging.getLogger(__name__)


class LinkerRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    negatives: int = 4
    C: float = 1.0
    folds: int = 4
    trees: int = 200
    learning_rate: float = 0.05
    depth: int = 3
    held_out: float = 0.2
    min_threshold: float = 0.3
    threads: int = 2
    seed: int = 0


def add_args(p) -> None:
    common.add_common_args(p, NAME, "linker")


def load_recipe(path=None, **overrides) -> LinkerRecipe:
    return common.load_recipe(LinkerRecipe, NAME, path, **overrides)


def _prf(y: np.ndarray, p: np.ndarray, t: float) -> tuple[float, float, float]:
    return _link_prf(p, y == 1, int((y == 1).sum()), t)


def _candidates(inst, vec: dict, m: int):
    """(events in time order, their MiniLM vectors, [(j, indices of event j's m most similar
    earlier events)]): what construction compares each event with."""
    evs = sorted(inst.events, key=lambda e: e.dt)
    V = np.vstack([vec[e.text()] for e in evs])
    return evs, V, [(j, np.argsort(-(V[:j] @ V[j]))[:m]) for j in range(1, len(evs))]


def timeline_links(model: LinkModel, instances, vec: dict, cue_vec: dict, m: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Each event against its m most similar earlier events, as construction links: per event the
    likeliest candidate's probability and whether that pair is a gold state change; plus the
    number of gold state changes."""
    probs, hits, n_gold = [], [], 0
    for inst in instances:
        evs, V, cands = _candidates(inst, vec, m)
        gold = {(i.formation, i.state_change) for i in inst.intentions if i.state_change}
        n_gold += len(gold)
        C = np.vstack([cue_vec[e.text()] for e in evs])
        for j, cand in cands:
            p = model.probs(V[cand], C[cand], V[j], C[j])
            b = int(np.argmax(p))
            probs.append(float(p[b]))
            hits.append((evs[cand[b]].id, evs[j].id) in gold)
    return np.array(probs), np.array(hits, dtype=bool), n_gold


def replay_examples(instances, vec: dict, m: int) -> list:
    """The pairs construction scores: every event against its m most similar earlier events
    (label 1 for a gold state change), once per distinct pair of texts."""
    out, seen = [], set()
    for inst in instances:
        evs, _, cands = _candidates(inst, vec, m)
        gold = {(inst.event(i.formation).text(), inst.event(i.state_change).text())
                for i in inst.intentions if i.state_change}
        for j, cand in cands:
            for c in cand:
                key = (evs[c].text(), evs[j].text())
                if key not in seen:
                    seen.add(key)
                    out.append(data.PairExample(*key, int(key in gold)))
        for key in gold - seen:  # a state change whose formation is not among the m: still a positive
            seen.add(key)
            out.append(data.PairExample(*key, 1))
    return out


def candidate_means(instances, vec: dict, cue_vec: dict, m: int) -> dict[str, tuple[float, float]]:
    """later event text -> its mean (MiniLM, cue-encoder) cosines with the m most similar earlier
    events of its timeline, as construction sees them (the first timeline a text appears in)."""
    out: dict[str, tuple[float, float]] = {}
    for inst in instances:
        evs, V, cands = _candidates(inst, vec, m)
        C = np.vstack([cue_vec[e.text()] for e in evs])
        for j, cand in cands:
            if evs[j].text() not in out:
                out[evs[j].text()] = (float((V[cand] @ V[j]).mean()), float((C[cand] @ C[j]).mean()))
    return out


def _link_prf(probs: np.ndarray, hits: np.ndarray, n_gold: int, t: float) -> tuple[float, float, float]:
    """Precision, recall, F1 of what scores >= t, when `hits` marks the right ones among n_gold."""
    made = probs >= t
    tp = float((made & hits).sum())
    prec = tp / max(1.0, float(made.sum()))
    rec = tp / max(1.0, float(n_gold))
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def _roles_out_of_fold(instances, vec, r) -> dict[str, np.ndarray]:
    """text -> (intent, change) scores, each from classifiers trained without its scenario's fold."""
    fold = data.scenario_folds(instances, r.folds, r.seed)
    return roles.roles_out_of_fold(instances, vec, ROLES, lambda i: fold[i.id], r.C, r.seed)


def _pair_xy(pairs, vec, cue_vec, role_of, means) -> tuple[np.ndarray, np.ndarray]:
    a = [e.earlier for e in pairs]
    b = [e.later for e in pairs]
    cm = np.array([vec[x] @ vec[y] for x, y in zip(a, b)])
    cc = np.array([cue_vec[x] @ cue_vec[y] for x, y in zip(a, b)])
    mean = [means.get(y) for y in b]
    X = link_features(cm, cc, np.array([role_of[x][0] for x in a]), np.array([role_of[x][1] for x in a]),
                      np.array([role_of[y][0] for y in b]), np.array([role_of[y][1] for y in b]),
                      np.array([m[0] if m else c for m, c in zip(mean, cm)]),
                      np.array([m[1] if m else c for m, c in zip(mean, cc)]))
    return X, np.array([e.label for e in pairs])


def _role_prf(model, instances, vec, role: str, pick: bool = False):
    """(threshold, precision, recall, F1) of an event classifier on held-out events; pick: the
    threshold with the best F1 (class weighting pushes its probabilities towards the rare positives)."""
    ex = data.role_examples(instances, role)
    if not ex:
        return (0.5, None, None, None)
    y = np.array([lab for _, lab in ex])
    p = model.predict_proba(np.vstack([vec[t] for t, _ in ex]))[:, 1]
    t = max(np.linspace(0.05, 0.95, 19).round(2), key=lambda t: (round(_prf(y, p, t)[2], 9), -t)) if pick else 0.5
    return (float(t), *_prf(y, p, t))


def _embed(model, texts: list[str], desc: str) -> dict:
    from tqdm import tqdm

    vec = {}
    for s in tqdm(range(0, len(texts), 256), desc=f"train {NAME}: {desc}", unit="batch"):
        chunk = texts[s:s + 256]
        vec.update(zip(chunk, model.encode(chunk)))
    return vec


def train(instances, out: Path, r: LinkerRecipe, embed_cfg, source: str = "", data_hash: str = "",
          link_candidates: int = 8, cue_spec: str = "base") -> ArtifactMeta:
    """link_candidates: m, the earlier events construction compares each new event with.
    cue_spec: the cue encoder construction uses (its cosine is one of the pair features)."""
    import joblib
    import torch
    from sklearn.ensemble import HistGradientBoostingClassifier

    from core.providers import build_embedder

    torch.set_num_threads(r.threads)
    t0 = time.time()
    tr, val = data.split(instances, r.held_out, r.seed)
    texts = sorted({e.text() for inst in instances for e in inst.events})
    vec = _embed(build_embedder(embed_cfg), texts, "embed")
    cue_vec = _embed(cue_encoder(cue_spec, embed_cfg), texts, "embed (cue encoder)")

    # What construction will score (each event against its m most similar earlier ones), plus the
    # sampled pairs with the hardest negative: the formation against its opportunity.
    pairs = replay_examples(tr, vec, link_candidates)
    seen = {(e.earlier, e.later) for e in pairs}
    pairs += [e for e in data.link_examples(tr, r.negatives, r.seed) if (e.earlier, e.later) not in seen]
    X, y = _pair_xy(pairs, vec, cue_vec, _roles_out_of_fold(tr, vec, r),
                    candidate_means(tr, vec, cue_vec, link_candidates))
    if len(set(y.tolist())) < 2:
        raise TrainingError("the training data needs both positive and negative examples")
    pair_model = HistGradientBoostingClassifier(
        max_iter=r.trees, learning_rate=r.learning_rate, max_depth=r.depth, early_stopping=False,
        class_weight="balanced", random_state=r.seed).fit(X, y)
    model = LinkModel(*roles.fit_roles(tr, vec, ROLES, r.C, r.seed), pair_model, threshold=1.0)

    grid = sorted({*np.linspace(0.05, 0.95, 19).round(2), 0.96, 0.97, 0.98, 0.99, 0.995, 0.998})
    grid = [t for t in grid if t >= r.min_threshold]
    probs, hits, n_gold = timeline_links(model, val, vec, cue_vec, link_candidates)
    if n_gold >= 3:
        model.threshold = max(grid, key=lambda t: (round(_link_prf(probs, hits, n_gold, t)[2], 9), t))
        p, rec, f1 = _link_prf(probs, hits, n_gold, model.threshold)
        chosen_on = "held-out timelines"
    else:  # too few held-out state changes to choose on: best F1 over the training pairs
        pc = pair_model.predict_proba(X)[:, 1]
        # in-sample scores sit near 0 and 1, so many thresholds tie: the middle one is the least brittle
        by_t = {t: round(_prf(y, pc, t)[2], 9) for t in grid}
        tied = [t for t in grid if by_t[t] == max(by_t.values())]
        model.threshold = tied[len(tied) // 2]
        p, rec, f1 = _prf(y, pc, model.threshold)
        chosen_on = "train pairs"
    ip = _role_prf(model.intent, val, vec, "formation", pick=True)
    cp = _role_prf(model.change, val, vec, "state_change")
    model.intent_threshold = ip[0]

    tmp = staging_dir(out)
    joblib.dump({**model.dump(), "version": VERSION}, tmp / LINKER_FILE)
    meta = ArtifactMeta(
        kind=NAME, version=VERSION, data=source, data_hash=data_hash, base=embed_cfg.backend,
        cue_encoder=cue_spec, cue_encoder_fingerprint=cue_fingerprint(cue_spec),
        threshold=float(model.threshold), seconds=round(time.time() - t0, 1), recipe=r.model_dump(),
        metrics={"train_pairs": len(pairs), "train_positives": int(y.sum()),
                 "threshold_chosen_on": chosen_on, "held_out_state_changes": n_gold,
                 "state_change_precision": p, "state_change_recall": rec, "state_change_f1": f1,
                 "intent_threshold": ip[0], "intent_precision": ip[1], "intent_recall": ip[2], "intent_f1": ip[3],
                 "change_precision": cp[1], "change_recall": cp[2], "change_f1": cp[3]})
    write_meta(tmp, meta)
    replace_dir(tmp, out)
    return meta


def run(args, cfg) -> int:
    r = load_recipe(args.recipe_path)
    td = common.training_data(args, cfg)
    out = common.out_path(args, cfg, "linker")
    meta = train(td.instances, out, r, cfg.memory.embedder, td.source, td.data_hash,
                 cfg.memory.construction.link_candidates, cfg.memory.construction.cue_encoder)
    m = meta.metrics
    print(f"linker -> {out}: {m['train_pairs']} pairs ({m['train_positives']} state changes) "
          f"in {meta.seconds} s; threshold {meta.threshold:.2f} ({m['threshold_chosen_on']}): "
          f"P {m['state_change_precision']:.2f} R {m['state_change_recall']:.2f} F1 {m['state_change_f1']:.2f}")
    return 0
