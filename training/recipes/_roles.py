"""Event role classifiers shared by the linker and gate recipes: does an event form an intention
("formation"), report that one got done, cancelled or moved ("state_change"), or offer a chance
to act on one ("opportunity": the decision moment of positive and state_change instances)?

Each is a logistic regression over the event's MiniLM vector. The small models trained on top of
them see their scores on training events out of fold: from classifiers trained without that
event's scenarios, so they learn how far to trust the scores on scenarios never seen.
"""
from __future__ import annotations

import random
from typing import Callable, Sequence

import numpy as np

from core.formats import Instance
from memory.construct.classifiers import role_scores


def role_examples(instances: Sequence[Instance], role: str) -> list[tuple[str, int]]:
    """Every distinct event text, 1 if it plays `role` in some instance, else 0 (ordinary events,
    near misses and look-alike confusers included)."""
    label: dict[str, int] = {}
    for inst in instances:
        if role == "opportunity":
            marked = {inst.decision_event} if inst.variant in ("positive", "state_change") else set()
        else:
            marked = {getattr(it, role) for it in inst.intentions}
        for e in inst.events:
            label[e.text()] = max(label.get(e.text(), 0), int(e.id in marked))
    return list(label.items())


def scenario_folds(instances: Sequence[Instance], folds: int, seed: int) -> dict[str, int]:
    """instance id -> fold: the scenarios shuffled with `seed` and dealt round-robin into `folds`
    (one fold when folds < 2), so that the variants of one scenario stay together."""
    from reasoner.gate.pairs import group_key

    scenarios = sorted({group_key(i) for i in instances})
    random.Random(seed).shuffle(scenarios)
    fold = {s: n % max(1, folds) for n, s in enumerate(scenarios)}
    return {i.id: fold[group_key(i)] for i in instances}


def fit_roles(instances: Sequence[Instance], vec: dict, roles: Sequence[str], C: float, seed: int) -> list:
    from sklearn.linear_model import LogisticRegression

    out = []
    for role in roles:
        ex = role_examples(instances, role)
        y = np.array([lab for _, lab in ex])
        if len(set(y.tolist())) < 2:
            raise ValueError(f"the training data holds no {role} event to learn from, or nothing else")
        out.append(LogisticRegression(C=C, max_iter=3000, class_weight="balanced", random_state=seed)
                   .fit(np.vstack([vec[t] for t, _ in ex]), y))
    return out


def roles_out_of_fold(instances: Sequence[Instance], vec: dict, roles: Sequence[str], fold_of: Callable[[Instance], int],
                      C: float, seed: int) -> dict[str, np.ndarray]:
    """text -> role scores from classifiers trained without its fold (in-sample if one fold)."""
    folds = sorted({fold_of(i) for i in instances})
    out: dict[str, np.ndarray] = {}
    for f in folds:
        rest = [i for i in instances if fold_of(i) != f] if len(folds) > 1 else list(instances)
        try:
            models = fit_roles(rest, vec, roles, C, seed)
        except ValueError:  # a tiny set whose other folds lack some role: in-sample for this fold
            models = fit_roles(instances, vec, roles, C, seed)
        texts = sorted({e.text() for i in instances if fold_of(i) == f for e in i.events} - out.keys())
        if texts:
            out.update(zip(texts, role_scores(models, np.vstack([vec[t] for t in texts]))))
    return out
