"""The trained linker (`promem train linker`): does a later event change an earlier one's intention?

Three models over the bundled MiniLM and the trained cue encoder, saved together:
- "intent": does an event form an intention? (logistic regression on its MiniLM vector)
- "change": does an event report that something got done, cancelled or moved? (same form)
- "state_change": the pair model, a small gradient-boosted classifier over a few numbers per pair:
  MiniLM and cue-encoder cosines, both events' intent and change scores, their products, and how
  far the pair's cosines stand out from those of the later event's other candidates.
A logistic regression over the pairs' whole MiniLM features (4 x 384) found a quarter of the
held-out state changes at 33% precision; these few numbers carry across scenarios it has not seen.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.construct.classifiers import proba, role_scores


def link_features(content_cos: np.ndarray, cue_cos: np.ndarray, intent_earlier: np.ndarray,
                  change_earlier: np.ndarray, intent_later: np.ndarray, change_later: np.ndarray,
                  content_mean: np.ndarray, cue_mean: np.ndarray) -> np.ndarray:
    """content_mean, cue_mean: the later event's mean cosines with the m candidates construction
    compares it with. How far a pair stands out from them carries over to a long chat whose turns
    all resemble each other, where the plain cosines alone linked most turns."""
    cm, cc, ia, ce, il, cl, mm, mc = (np.asarray(x, dtype=np.float32).reshape(-1) for x in
                                      (content_cos, cue_cos, intent_earlier, change_earlier, intent_later,
                                       change_later, content_mean, cue_mean))
    return np.column_stack([cm, cc, cl, cl * cm, cl * cc, cm * cc, ia, ia * cl, ia * cc, ce, il,
                            cm - mm, cc - mc]).astype(np.float32)


@dataclass
class LinkModel:
    intent: Any  # sklearn classifiers with predict_proba
    change: Any
    state_change: Any
    threshold: float
    intent_threshold: float = 0.5  # an event at or above it is stored as an intention

    def roles(self, vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(intent, change) probability per MiniLM event vector."""
        s = role_scores([self.intent, self.change], vecs)
        return s[:, 0], s[:, 1]

    def probs(self, earlier: np.ndarray, earlier_cue: np.ndarray, later: np.ndarray, later_cue: np.ndarray) -> np.ndarray:
        """State-change probability of each earlier event (rows) against one later event."""
        earlier, earlier_cue = np.atleast_2d(earlier), np.atleast_2d(earlier_cue)
        ia, ce = self.roles(earlier)
        il, cl = (np.full(len(earlier), x[0]) for x in self.roles(later))
        cm, cc = earlier @ later, earlier_cue @ later_cue
        feats = link_features(cm, cc, ia, ce, il, cl, np.full_like(cm, cm.mean()), np.full_like(cc, cc.mean()))
        return proba(self.state_change, feats)

    def dump(self) -> dict:
        return {"intent": self.intent, "change": self.change, "state_change": self.state_change,
                "threshold": self.threshold, "intent_threshold": self.intent_threshold}
