"""Features of the small classifiers trained here; shared by the training recipe and construction."""
from __future__ import annotations

import numpy as np


def pair_features(earlier: np.ndarray, later: np.ndarray) -> np.ndarray:
    """(earlier event, later event) -> features for "the later event changes the earlier one's intention".

    The later vector alone carries the resolution's wording ("already bought", "don't"); the
    product and difference carry whether it is about the same thing.
    """
    earlier = np.atleast_2d(earlier)
    later = np.atleast_2d(later)
    cos = np.sum(earlier * later, axis=1, keepdims=True)
    return np.hstack([earlier * later, np.abs(earlier - later), later, cos]).astype(np.float32)


def intent_features(event: np.ndarray) -> np.ndarray:
    return np.atleast_2d(event).astype(np.float32)
