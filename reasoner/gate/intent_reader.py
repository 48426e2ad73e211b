"""The gate's intent reader: MiniLM fine-tuned end to end (core/text_classifier.py) on "does this
event form a delayed intention?". When a gate artifact holds one (recipe intent_model: finetune;
off by default), its score replaces the logistic formation role over the frozen embedding. Read
alone it tells a formation from other events better than that layer, also in other voices; in the
gate it lifts the generated split and raised false alarms on the independent pack (BENCHMARKS.md,
"Training in other voices, and a fine-tuned intent reader"). Saved in the gate's folder as intent/, fp16.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import numpy as np

from core.formats import Event

FOLDER = "intent"
CACHE = 4096  # event texts kept scored: recalled events come back at many moments


class IntentReader:
    def __init__(self, model):
        self.model = model  # core.text_classifier.TextClassifier
        self._scores: OrderedDict[str, float] = OrderedDict()

    def score(self, events: Sequence[Event]) -> np.ndarray:
        from reasoner.gate.features import event_line

        texts = [event_line(e) for e in events]
        todo = list(dict.fromkeys(t for t in texts if t not in self._scores))
        for t, s in zip(todo, self.model.score(todo)):
            self._scores[t] = float(s)
        while len(self._scores) > CACHE:
            self._scores.popitem(last=False)
        return np.array([self._scores[t] for t in texts], dtype=np.float32)

    def save(self, path: str | Path) -> None:
        self.model.save(Path(path) / FOLDER)

    @classmethod
    def load(cls, path: str | Path) -> "IntentReader":
        """OSError / ValueError (from TextClassifier.load) when its weights are missing or do not fit."""
        from core.text_classifier import TextClassifier

        return cls(TextClassifier.load(Path(path) / FOLDER))
