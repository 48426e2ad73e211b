"""The on-device gate: a small MLP over MiniLM features of (recalled past event, current event,
time gap) that scores "an unresolved intention from that past event is actionable now". Beside it, a "now" head scores
the moment alone, for when memory hands over no past event (reasoner/gate/now_head.py)."""
