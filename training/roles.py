"""Event role classifiers shared by the linker and gate recipes: does an event form an intention
("formation"), report that one got done, cancelled or moved ("state_change"), or offer a chance
to act on one ("opportunity": the decision moment of positive and state_change instances)?

Each is a logistic regression over the event's MiniLM vector. The small models trained on top of
them see their scores on training events out of fold: from classifiers trained without that
event's scenarios, so they learn how far to trust the scores on scenarios never seen.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from core.formats import Instance
from memory.construct.classifiers import role_scores
from training.data import role_examples


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
