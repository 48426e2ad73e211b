"""Prediction with the small scikit-learn models trained here (the linker's and the gate's)."""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np


@lru_cache(maxsize=1)
def _threadpools():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def proba(model, X: np.ndarray) -> np.ndarray:
    """Positive-class probability per row, on one thread: for the few rows of one decision,
    OpenMP's thread team costs more than it saves, and when the CPUs are busy its spin-waits
    made a gradient-boosted model's call 25 ms instead of 1 ms."""
    with _threadpools().limit(limits=1, user_api="openmp"):
        return model.predict_proba(X)[:, 1]


def role_scores(models: Sequence, vecs: np.ndarray) -> np.ndarray:
    """(events, roles) probabilities of the event role classifiers (training/roles.py):
    logistic regressions over MiniLM event vectors."""
    vecs = np.atleast_2d(vecs)
    return np.column_stack([m.predict_proba(vecs)[:, 1] for m in models])
