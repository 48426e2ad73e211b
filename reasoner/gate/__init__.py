"""The on-device gate: scores "an unresolved intention from this recalled past event is actionable
now" for (past event, current event) pairs: event role classifiers and a small gradient-boosted
classifier over a few features (reasoner/gate/features.py). Beside it, a "now" head scores the
moment alone, for when memory hands over no past event (reasoner/gate/now_head.py)."""
