"""The thing reader: MiniLM fine-tuned to read the event an intention formed at and say what a
message about it should name. One forward pass, two heads: a token head marks the words that name
the thing (and what else a listener needs to recognise it: whose it is, where it is to be done), and
a head over the mean-pooled tokens picks which of compose.ACTION_PHRASES fits. Read alone, the
composer's rules name the thing in other voices (code-switched, cluttered captions) less often.

training/recipes/thing_reader.py trains it on the keyword groups of CPMBench train instances.
Saved like core/text_classifier.py: the tuned weights in fp16 (reader.safetensors, the token
embeddings stay the base's) with the action phrases in its metadata, and meta.json.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from core.artifacts import ArtifactError, cached_model, require
from core.formats import Event
from core.text import WORD_RE
from core.text_classifier import MINILM, load_base, mean_pool, read_tuned, save_tuned

VERSION = 1
WEIGHTS = "reader.safetensors"
MARK = 0.5  # a word the token head gives at least this is part of the thing
CACHE = 1024  # events read: the same formation comes back at many moments


def reader_text(e: Event) -> str:
    """What the reader reads: caption and transcript (where the user stands then is not the thing)."""
    parts = [e.visual.strip()] if e.visual and e.visual.strip() else []
    if e.audio and e.audio.strip():
        parts.append(f'Heard: "{e.audio.strip()}"')
    return " ".join(parts)


@dataclass(frozen=True)
class Run:
    """Adjacent marked words of the text: start and end characters, and the highest word score."""

    start: int
    end: int
    score: float


@dataclass(frozen=True)
class Reading:
    text: str
    runs: list[Run]  # in text order
    action: Optional[str]  # the action phrase the action head puts first

    def spans(self) -> list[str]:
        return [self.text[r.start:r.end] for r in self.runs]


class ThingReader:
    def __init__(self, actions: Sequence[str], base: str = MINILM, max_length: int = 160):
        import torch

        self.actions, self.base, self.max_length = list(actions), base, max_length
        self.tokenizer, encoder = load_base(base, "thing reader base model")
        hidden = encoder.config.hidden_size
        self.net = torch.nn.ModuleDict({"encoder": encoder, "tokens": torch.nn.Linear(hidden, 1),
                                        "action": torch.nn.Linear(hidden, len(self.actions))})
        self._read: OrderedDict[str, Reading] = OrderedDict()

    def tune_all_but_embeddings(self) -> None:
        for p in self.net["encoder"].embeddings.parameters():
            p.requires_grad = False

    def tokenize(self, texts: Sequence[str]):
        """(batch for the encoder, each token's (start, end) characters)."""
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                             return_offsets_mapping=True, return_tensors="pt")
        return enc, enc.pop("offset_mapping")

    def logits(self, enc, dropout: float = 0.1):
        """(token logits (batch, tokens), action logits (batch, actions))."""
        import torch

        h = self.net["encoder"](**enc).last_hidden_state
        h = torch.nn.functional.dropout(h, dropout, self.net.training)
        return self.net["tokens"](h).squeeze(-1), self.net["action"](mean_pool(h, enc["attention_mask"]))

    def read_many(self, texts: Sequence[str]) -> list[Reading]:
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self._read]
        if todo:
            self.net.eval()
            with torch.inference_mode():
                enc, offsets = self.tokenize(todo)
                tok, act = self.logits(enc)
            for i, t in enumerate(todo):
                probs = torch.sigmoid(tok[i]).numpy()
                self._read[t] = Reading(t, _runs(t, probs, offsets[i].tolist()),
                                        self.actions[int(act[i].argmax())] if self.actions else None)
        out = [self._read[t] for t in texts]
        for t in texts:
            self._read.move_to_end(t)
        while len(self._read) > CACHE:
            self._read.popitem(last=False)
        return out

    def read(self, e: Event) -> Reading:
        return self.read_many([reader_text(e)])[0]

    def save(self, folder: str | Path) -> Path:
        """reader.safetensors in `folder`: the tuned weights in fp16, base, length and actions as metadata."""
        return save_tuned(self.net, Path(folder) / WEIGHTS, {"base": self.base, "max_length": str(self.max_length),
                                                             "actions": json.dumps(self.actions)})

    @classmethod
    def load_weights(cls, folder: str | Path) -> "ThingReader":
        """The base with the saved weights over it (float32). ValueError when they are unreadable or do not fit."""
        f = Path(folder) / WEIGHTS
        try:
            state, info = read_tuned(f)
            actions = json.loads(info.get("actions", "[]"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{f}: not a readable reader ({exc})") from None
        model = cls(actions, info.get("base", MINILM), int(info.get("max_length", 160)))
        unknown = set(state) - set(model.net.state_dict())
        if unknown or "tokens.weight" not in state or "action.weight" not in state:
            raise ValueError(f"{f}: does not fit base {model.base!r}")
        model.net.load_state_dict(state, strict=False)
        model.net.eval()
        return model


def _runs(text: str, probs: np.ndarray, offsets: list[list[int]]) -> list[Run]:
    """Words scored by their best token; adjacent words at or above MARK joined into runs. Where no
    word reaches MARK, the best word alone (the message still needs a name for the thing)."""
    words = [(m.start(), m.end()) for m in WORD_RE.finditer(text)]
    if not words:
        return []
    scores = [max((float(p) for p, (a, b) in zip(probs, offsets) if b > a and a < e and b > s), default=0.0)
              for s, e in words]
    runs: list[Run] = []
    cur: list[int] = []
    for i, s in enumerate([*scores, -1.0]):
        if s >= MARK:
            cur.append(i)
        elif cur:
            runs.append(Run(words[cur[0]][0], words[cur[-1]][1], max(scores[j] for j in cur)))
            cur = []
    if not runs:
        best = int(np.argmax(scores))
        runs = [Run(words[best][0], words[best][1], scores[best])]
    return runs


def load_reader(path: str | Path) -> ThingReader:
    """The reader at `path`; ArtifactError naming `promem train thing-reader` when it is missing,
    of another version or unreadable."""
    path = Path(path)
    require(path, VERSION, "thing reader", "thing-reader")

    def load() -> ThingReader:
        try:
            return ThingReader.load_weights(path)
        except ValueError as exc:
            raise ArtifactError(f"the thing reader at {path}: {exc}: run `promem train thing-reader` again") from None

    return cached_model("thing-reader", path, "", load)
