"""Fine-tune a text classifier (core/text_classifier.py: MiniLM read end to end, a linear head) on
labelled texts or text pairs, on the CPU in a bounded time. Shared by every recipe that trains a
model reading the text (the now head; pair cross-encoders and event classifiers the same way).

fit() holds what such training needs: a fixed seed, AdamW with linear warmup and decay, epochs
and batch size, a maximum token length, positives weighted by the class ratio, torch threads from
the settings, a progress bar, and a wall-time budget: past it training stops after the current
step, says so, and returns the model as it is (FitResult.stopped_by_budget). The held-out examples
are scored at the end, for the caller to calibrate a threshold and report.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from core.text_classifier import MINILM, TextClassifier

log = logging.getLogger(__name__)


class FinetuneSettings(BaseModel):
    """How to fine-tune; a recipe YAML holds these under its own prefix (e.g. now_ft_*)."""

    model_config = ConfigDict(extra="forbid")
    base: str = MINILM          # "minilm" (the bundled all-MiniLM-L6-v2) or a local model folder
    max_length: int = Field(128, ge=8)
    epochs: float = Field(3.0, gt=0)  # a fraction trains on part of the last epoch
    batch_size: int = Field(16, ge=1)
    lr: float = 5.0e-5          # the encoder's layers
    head_lr: float = 1.0e-3     # the new linear head starts from random weights: a larger step
    weight_decay: float = 0.01
    warmup: float = Field(0.1, ge=0, le=1)  # share of the steps with a linearly rising learning rate
    train_layers: int = Field(6, ge=0)      # top transformer layers tuned; the rest and the embeddings stay frozen
    class_weight: bool = True   # weight positives by negatives/positives
    budget_s: float = Field(600.0, gt=0)    # wall-time limit, from the start of fit (loading the base included)
    threads: int = Field(1, ge=1)
    seed: int = 0


@dataclass
class Example:
    """One labelled input: a text, or (with pair) a text pair read as one sequence pair."""

    text: str
    label: int
    pair: Optional[str] = None


@dataclass
class FitResult:
    model: TextClassifier
    seconds: float
    steps: int
    planned_steps: int
    stopped_by_budget: bool
    losses: list[float] = field(default_factory=list)  # mean training loss per tenth of the steps done
    held_out_scores: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))


def split_held_out(items: Sequence, share: float, seed: int) -> tuple[list, list]:
    """(train, held out): a seeded shuffle, `share` of the items held out."""
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    n = int(round(len(items) * share))
    return [items[i] for i in order[n:]], [items[i] for i in order[:n]]


def length_batches(lengths: Sequence[int], batch_size: int, epochs: float, rng: random.Random) -> list[list[int]]:
    """Shuffled index batches for `epochs` passes (the last one cut short for a fraction). Each run
    of 8 batches is sorted by length before it is cut, so a batch pads little: on the CPU the
    padding is paid in full."""
    n = len(lengths)
    out: list[list[int]] = []
    total = int(round(epochs * ((n + batch_size - 1) // batch_size)))
    while len(out) < total:
        order = list(range(n))
        rng.shuffle(order)
        epoch: list[list[int]] = []
        for i in range(0, n, 8 * batch_size):
            run = sorted(order[i:i + 8 * batch_size], key=lambda j: lengths[j])
            epoch += [run[k:k + batch_size] for k in range(0, len(run), batch_size)]
        rng.shuffle(epoch)
        out += epoch
    return out[:total]


@dataclass
class Steps:
    """What a run of training steps did: the loss of each step, the steps planned, and whether the
    wall-time budget cut it short."""

    losses: list[float]
    planned: int
    stopped_by_budget: bool

    def tenths(self) -> list[float]:
        """The mean loss per tenth of the steps done."""
        tenth = max(1, len(self.losses) // 10)
        return [round(float(np.mean(self.losses[i:i + tenth])), 4) for i in range(0, len(self.losses), tenth)]


def run_steps(body: list, heads: list, lengths: Sequence[int], settings: FinetuneSettings,
              step_loss: Callable[[list[int]], "torch.Tensor"], t0: float, desc: str, progress: bool = True) -> Steps:
    """The loop every fine-tuning here shares: AdamW over the encoder's trainable weights (lr) and the
    new heads (head_lr), linear warmup and decay, batches of alike lengths for `epochs`, a progress
    bar, and the wall-time budget counted from t0. step_loss(example indices) gives a batch's loss."""
    import torch
    from tqdm import tqdm

    opt = torch.optim.AdamW([{"params": body, "lr": settings.lr}, {"params": heads, "lr": settings.head_lr}],
                            weight_decay=settings.weight_decay)
    batches = length_batches(lengths, settings.batch_size, settings.epochs, random.Random(settings.seed))
    warm = max(1, int(settings.warmup * len(batches)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (len(batches) - s) / max(1, len(batches) - warm))))
    losses: list[float] = []
    stopped = False
    bar = tqdm(batches, desc=desc, unit="step", disable=not progress)
    for idx in bar:
        if time.perf_counter() - t0 > settings.budget_s:
            stopped = True
            break
        loss = step_loss(idx)
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
    bar.close()
    if stopped:
        log.warning("%s: wall-time budget of %.0f s reached: stopped after %d of %d steps; the model is kept "
                    "as trained so far", desc, settings.budget_s, len(losses), len(batches))
    return Steps(losses, len(batches), stopped)


def fit(train: Sequence[Example], settings: FinetuneSettings, held_out: Sequence[Example] = (),
        progress: bool = True, desc: str = "fine-tune") -> FitResult:
    """Fine-tune a fresh classifier on `train`; score `held_out` with the result."""
    import torch

    if not train:
        raise ValueError("fine-tuning needs at least one training example")
    paired = [e.pair is not None for e in train]
    if any(paired) and not all(paired):
        raise ValueError("training examples mix single texts and text pairs")
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    try:
        model = TextClassifier(settings.base, settings.max_length)
        model.tune_only_top(settings.train_layers)
        model.net.train()
        pairs = [e.pair for e in train] if train[0].pair is not None else None
        lengths = [len(ids) for ids in model.tokenizer([e.text for e in train], pairs, truncation=True,
                                                      max_length=settings.max_length)["input_ids"]]
        pos = sum(e.label for e in train)
        pos_weight = (len(train) - pos) / pos if settings.class_weight and pos else 1.0
        loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pos_weight))

        def step_loss(idx: list[int]):
            batch = [train[i] for i in idx]
            enc = model.tokenize([e.text for e in batch], [e.pair for e in batch] if pairs is not None else None)
            return loss_fn(model.logits(enc), torch.tensor([float(e.label) for e in batch]))

        steps = run_steps([p for p in model.net["encoder"].parameters() if p.requires_grad],
                          list(model.net["head"].parameters()), lengths, settings, step_loss, t0, desc, progress)
        model.net.eval()
        scores = model.score([e.text for e in held_out], [e.pair for e in held_out] if held_out and held_out[0].pair is not None else None)
    finally:
        torch.set_num_threads(threads)
    return FitResult(model=model, seconds=round(time.perf_counter() - t0, 1), steps=len(steps.losses),
                     planned_steps=steps.planned, stopped_by_budget=steps.stopped_by_budget,
                     losses=steps.tenths(), held_out_scores=scores)
