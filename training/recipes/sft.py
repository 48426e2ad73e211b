"""LoRA SFT of the LLM reasoner on CPMBench train instances (the paper's reasoner training).

Examples come from training/sft_data.py (the reasoner prompt as render_messages builds it ->
a reasoning trace + `Decision: {json}`); the loss covers only the assistant tokens. Writes a
PEFT adapter (adapter_config.json + adapter_model.safetensors) that
`vllm serve BASE --enable-lora --lora-modules promem=DIR` serves and the transformers + peft
backend loads, plus meta.json (core.artifacts.ArtifactMeta) and the examples it trained on (examples.jsonl).

One process, or several with DDP: `torchrun --nproc_per_node 2 -m training.recipes.sft -c CONFIG`.
An interrupted run resumes from its last checkpoint (OUT/checkpoints/step-N) when rerun.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Literal, Optional, Sequence

from pydantic import BaseModel, ConfigDict

from core.artifacts import ArtifactMeta, write_meta
from core.config import resolve_path
from core.formats import Instance
from core.jsonio import atomic_write_jsonl, iter_jsonl
from training import data
from training import recipe as common
from training.errors import TrainingError

NAME = "sft"
# The adapter's meta.json format; the adapter itself is read by vLLM and peft, which check none.
ADAPTER_VERSION = 1
CHECKPOINTS = "checkpoints"
STATE_FILE = "trainer_state.pt"
log = logging.getLogger(__name__)


class SFTRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_model: str
    past: Literal["gold", "retrieval"] = "gold"
    memory_profile: Optional[str] = None  # past=retrieval: profile whose memory section replays (None: -c's)
    distractors: int = 6
    prompt: str = "reasoner.v1"
    max_length: int = 4096
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: list[str] = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    lr: float = 5e-4
    warmup: float = 0.1
    epochs: float = 5.0
    batch_size: int = 1
    grad_accum: int = 8
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    dtype: Literal["auto", "bf16", "fp32"] = "auto"
    gradient_checkpointing: bool = False
    save_every: int = 50
    keep_checkpoints: int = 2
    max_instances: Optional[int] = None
    threads: int = 2
    seed: int = 0


def load_recipe(path: str | Path | None = None, **overrides) -> SFTRecipe:
    return common.load_recipe(SFTRecipe, NAME, path, **overrides)


# -- tokenisation -----------------------------------------------------------------------------
BASE_WAY_OUT = "`promem train sft --base DIR`, or base_model in the recipe YAML"


def load_tokenizer(base: str):
    from transformers import AutoTokenizer

    from core.providers.hub import hub_weights
    from core.providers.llm_transformers import CHATML_TEMPLATE

    with hub_weights(base, "base model", BASE_WAY_OUT, TrainingError):
        tok = AutoTokenizer.from_pretrained(base)
    if not tok.chat_template:
        tok.chat_template = CHATML_TEMPLATE  # the transformers backend falls back to the same template
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def end_of_turn(tok) -> str:
    """The token that closes an assistant turn: ChatML's <|im_end|> when the vocabulary has it."""
    tid = tok.convert_tokens_to_ids("<|im_end|>")
    return "<|im_end|>" if isinstance(tid, int) and tid != tok.unk_token_id and tid is not None else tok.eos_token


def encode_example(tok, messages, target: str, max_length: int) -> Optional[dict]:
    """input_ids = prompt (with the generation prompt, as at inference) + target + end of turn;
    labels are -100 on the prompt, so the loss covers only the assistant's tokens. None when too long."""
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    t_ids = tok(target + end_of_turn(tok), add_special_tokens=False)["input_ids"]
    if len(p_ids) + len(t_ids) > max_length:
        return None
    return {"input_ids": p_ids + t_ids, "labels": [-100] * len(p_ids) + t_ids}


def collate(rows: Sequence[dict], pad_id: int):
    """Left-padded batch, so every row's assistant tokens sit at the end and only the last
    `keep` positions need logits (the vocabulary head over a long prompt is most of the cost).
    position_ids count real tokens only, as at inference where the prompt starts at 0."""
    import torch

    n = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), n), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), n), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    for i, r in enumerate(rows):
        k = len(r["input_ids"])
        ids[i, n - k:] = torch.tensor(r["input_ids"])
        labels[i, n - k:] = torch.tensor(r["labels"])
        mask[i, n - k:] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    first = [next((j for j, t in enumerate(r["labels"]) if t != -100), len(r["labels"])) for r in rows]
    keep = max(len(r["labels"]) - f for r, f in zip(rows, first)) + 1
    return {"input_ids": ids, "attention_mask": mask, "position_ids": pos, "labels": labels, "keep": min(keep, n)}


def assistant_loss(model, batch: dict, n_tokens: int):
    """Sum of token cross-entropies over the assistant tokens, divided by n_tokens (the step's count)."""
    import torch.nn.functional as F

    keep = batch["keep"]
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                position_ids=batch["position_ids"], logits_to_keep=keep, use_cache=False)
    logits = out.logits[:, :-1].float()  # position t predicts token t+1
    target = batch["labels"][:, -keep + 1:] if keep > 1 else batch["labels"][:, :0]
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=-100,
                           reduction="sum")
    return loss / max(1, n_tokens)


# -- distribution and schedule ---------------------------------------------------------------
class Dist:
    """torch.distributed when launched by torchrun/accelerate (WORLD_SIZE > 1), else one process."""

    def __init__(self):
        import torch

        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        cuda = torch.cuda.is_available()
        if self.world > 1:
            import torch.distributed as dist

            if not dist.is_initialized():
                dist.init_process_group("nccl" if cuda else "gloo")
        self.device = torch.device(f"cuda:{self.local_rank}" if cuda else "cpu")
        if cuda:
            torch.cuda.set_device(self.device)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()

    def mean(self, value: float) -> float:
        """The mean of a number over ranks (for the logged loss; gradients are averaged by DDP)."""
        if self.world == 1:
            return value
        import torch
        import torch.distributed as dist

        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return float(t.item()) / self.world

    def close(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def step_batches(n: int, step: int, steps_per_epoch: int, global_batch: int, seed: int, rank: int, world: int,
                 batch_size: int) -> list[list[int]]:
    """This rank's micro-batches (example indices) for optimizer step `step`.

    A pure function of (seed, step), so a resumed run sees exactly the batches it would have seen.
    Each epoch is a fresh permutation, repeated cyclically to fill the last global batch.
    """
    epoch, within = divmod(step, steps_per_epoch)
    order = list(range(n))
    random.Random(seed * 1000003 + epoch).shuffle(order)
    start = within * global_batch
    chunk = [order[(start + i) % n] for i in range(global_batch)]
    mine = chunk[rank::world]
    return [mine[i:i + batch_size] for i in range(0, len(mine), batch_size)]


def lr_lambda(total: int, warmup: float):
    warm = max(1, int(round(total * warmup)))

    def f(s: int) -> float:
        if s < warm:
            return (s + 1) / warm  # linear warmup over the first `warmup` share of steps
        return max(0.0, (total - s) / max(1, total - warm))  # then linear decay to zero
    return f


# -- checkpoints --------------------------------------------------------------------------------
def latest_checkpoint(out: Path) -> Optional[Path]:
    root = out / CHECKPOINTS
    if not root.is_dir():
        return None
    done = [d for d in root.iterdir() if d.name.startswith("step-") and (d / STATE_FILE).is_file()]
    return max(done, key=lambda d: int(d.name.split("-")[1])) if done else None


def save_checkpoint(out: Path, step: int, peft_model, opt, sched, losses, fingerprint: str, keep: int) -> Path:
    import torch

    ck = out / CHECKPOINTS / f"step-{step:06d}"
    tmp = ck.with_name(ck.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    peft_model.save_pretrained(tmp)
    state = {"step": step, "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "losses": losses,
             "fingerprint": fingerprint, "rng_cpu": torch.get_rng_state(),
             "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    torch.save(state, tmp / STATE_FILE)
    shutil.rmtree(ck, ignore_errors=True)
    tmp.rename(ck)  # a checkpoint appears complete or not at all
    olds = sorted((d for d in (out / CHECKPOINTS).iterdir() if d.name.startswith("step-") and not d.name.endswith(".tmp")),
                  key=lambda d: int(d.name.split("-")[1]))
    for d in olds[:-max(1, keep)]:
        shutil.rmtree(d, ignore_errors=True)
    return ck


def load_checkpoint(ck: Path, peft_model, opt, sched, fingerprint: str) -> tuple[int, list[float]]:
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    state = torch.load(ck / STATE_FILE, map_location="cpu", weights_only=False)
    if state.get("fingerprint") != fingerprint:
        raise TrainingError(f"checkpoint {ck} was made with other data or another recipe; "
                            f"rerun with --fresh to start over (or use another --out)")
    device = next(peft_model.parameters()).device
    weights = load_file(str(ck / "adapter_model.safetensors"), device=str(device))
    result = set_peft_model_state_dict(peft_model, weights)
    if getattr(result, "unexpected_keys", None):
        raise TrainingError(f"checkpoint {ck} does not fit this model: {result.unexpected_keys[:3]}")
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng_cpu"])
    if state.get("rng_cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["rng_cuda"])
    return int(state["step"]), list(state["losses"])


# -- training -------------------------------------------------------------------------------------
def fingerprint_of(rows: Sequence[dict], recipe: SFTRecipe) -> str:
    h = hashlib.sha256(recipe.model_dump_json(exclude={"save_every", "keep_checkpoints", "threads"}).encode())
    for r in rows:
        h.update(json.dumps(r["input_ids"]).encode())
    return h.hexdigest()[:16]


def build_model(recipe: SFTRecipe, device):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from core.providers.hub import hub_weights

    bf16 = recipe.dtype == "bf16" or (recipe.dtype == "auto" and device.type == "cuda")
    with hub_weights(recipe.base_model, "base model", BASE_WAY_OUT, TrainingError):
        base = AutoModelForCausalLM.from_pretrained(recipe.base_model, dtype=torch.bfloat16 if bf16 else torch.float32)
    base.config.use_cache = False
    if recipe.gradient_checkpointing:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.enable_input_require_grads()
    lora = LoraConfig(r=recipe.lora_r, lora_alpha=recipe.lora_alpha, lora_dropout=recipe.lora_dropout,
                      target_modules=list(recipe.target_modules), bias="none", task_type="CAUSAL_LM")
    # autocast_adapter_dtype keeps the LoRA weights in fp32 over a bf16 base: stable AdamW updates.
    model = get_peft_model(base, lora, autocast_adapter_dtype=True)
    return model.to(device), ("bf16" if bf16 else "fp32")


def train(rows: Sequence[dict], recipe: SFTRecipe, out_dir: str | Path, tokenizer, progress: bool = True,
          stop_after: Optional[int] = None, fresh: bool = False):
    """Train on encoded rows ({input_ids, labels}); returns (meta, peft_model) on every rank.

    stop_after: stop after this many optimizer steps in total (as an interruption would); the
    schedule still spans the whole recipe, so a rerun continues it exactly.
    """
    import torch
    from tqdm import tqdm

    dist = Dist()
    out = Path(out_dir)
    if not rows:
        raise ValueError("no training examples")
    torch.manual_seed(recipe.seed)
    if dist.device.type == "cpu":
        torch.set_num_threads(max(1, recipe.threads))
    model, dtype = build_model(recipe, dist.device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    global_batch = recipe.batch_size * recipe.grad_accum * dist.world
    steps_per_epoch = max(1, math.ceil(len(rows) / global_batch))
    total = max(1, math.ceil(steps_per_epoch * recipe.epochs))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(total, recipe.warmup))
    fp = fingerprint_of(rows, recipe)

    step, losses, resumed_from = 0, [], None
    if fresh and dist.main:
        shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
    dist.barrier()
    ck = latest_checkpoint(out)
    if ck is not None:
        step, losses = load_checkpoint(ck, model, opt, sched, fp)
        resumed_from = step
        if dist.main:
            log.info("sft: resuming from %s (step %d of %d)", ck, step, total)
    ddp = model
    if dist.world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        ddp = DDP(model, device_ids=[dist.local_rank] if dist.device.type == "cuda" else None)
    end = total if stop_after is None else min(total, stop_after)
    pad_id = tokenizer.pad_token_id
    model.train()
    t0 = time.perf_counter()
    bar = tqdm(total=total, initial=step, desc="sft", unit="step", disable=not (progress and dist.main))
    while step < end:
        micro = step_batches(len(rows), step, steps_per_epoch, global_batch, recipe.seed, dist.rank, dist.world,
                             recipe.batch_size)
        batches = [collate([rows[i] for i in mb], pad_id) for mb in micro]
        # The step's loss is the mean over all its assistant tokens on this rank, however they are split.
        n_tokens = sum(int((b["labels"][:, 1:] != -100).sum()) for b in batches)
        step_loss = 0.0
        for j, b in enumerate(batches):
            b = {k: (v.to(dist.device) if hasattr(v, "to") else v) for k, v in b.items()}
            sync = j == len(batches) - 1 or dist.world == 1
            with (nullcontext() if sync else ddp.no_sync()):
                loss = assistant_loss(ddp, b, n_tokens)
                loss.backward()
            step_loss += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(params, recipe.max_grad_norm)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        step_loss = dist.mean(step_loss)
        losses.append(round(step_loss, 5))
        bar.update(1)
        bar.set_postfix(loss=f"{step_loss:.3f}", lr=f"{sched.get_last_lr()[0]:.2e}")
        if step % max(1, recipe.save_every) == 0 or step == end:
            if dist.main:
                save_checkpoint(out, step, model, opt, sched, losses, fp, recipe.keep_checkpoints)
            dist.barrier()  # no rank runs ahead of a checkpoint it might have to resume from
    bar.close()
    model.eval()
    k = max(1, min(5, len(losses) // 5 or 1))
    meta = ArtifactMeta(
        kind="sft-adapter", version=ADAPTER_VERSION, base=recipe.base_model,
        seconds=round(time.perf_counter() - t0, 1), recipe=recipe.model_dump(),
        metrics={"dtype": dtype, "device": str(dist.device), "world_size": dist.world, "examples": len(rows),
                 "steps": step, "total_steps": total, "complete": step >= total, "resumed_from": resumed_from,
                 "loss_first": round(sum(losses[:k]) / k, 4) if losses else None,
                 "loss_last": round(sum(losses[-k:]) / k, 4) if losses else None,
                 "losses": losses, "fingerprint": fp})
    if dist.main and step >= total:
        model.save_pretrained(out)  # adapter_config.json + adapter_model.safetensors
        write_meta(out, meta)
    dist.barrier()
    dist.close()
    return meta, model


# -- data preparation ---------------------------------------------------------------------------
def prepare_rows(instances: Sequence[Instance], recipe: SFTRecipe, cfg, tokenizer, out: Path,
                 progress: bool = True) -> tuple[list[dict], int]:
    """Build (or reuse) OUT/examples.jsonl and encode it; returns (rows, examples dropped as too long).

    Rank 0 builds the examples once; the other ranks wait and read the same file.
    """
    from training.sft_data import build_examples

    path = out / "examples.jsonl"
    h = hashlib.sha256(json.dumps([recipe.past, recipe.distractors, recipe.seed, recipe.prompt]).encode())
    for inst in instances:
        h.update(inst.model_dump_json().encode())
    if recipe.past == "retrieval":  # what retrieval gives depends on the memory settings
        h.update(cfg.memory.model_dump_json().encode())
    key = h.hexdigest()[:16]
    rank = int(os.environ.get("RANK", "0"))
    ready = path.is_file() and _examples_key(path) == key
    if rank == 0 and not ready:
        exs = build_examples(instances, recipe.past, recipe.distractors, recipe.seed, cfg, recipe.prompt, progress)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_jsonl(path, [{"key": key}] + [asdict(e) for e in exs])
    elif not ready:
        deadline = time.time() + 3600
        while not (path.is_file() and _examples_key(path) == key):
            if time.time() > deadline:
                raise TrainingError(f"rank {rank}: {path} did not appear")
            time.sleep(2)
    rows, dropped = [], 0
    for no, obj in iter_jsonl(path):
        if not isinstance(obj, dict) or "messages" not in obj:
            continue
        enc = encode_example(tokenizer, obj["messages"], obj["target"], recipe.max_length)
        if enc is None:
            dropped += 1
            log.warning("%s line %d (%s): longer than max_length=%d tokens; not trained on", path, no,
                        obj.get("id"), recipe.max_length)
            continue
        rows.append(enc)
    return rows, dropped


def _examples_key(path: Path) -> Optional[str]:
    with open(path, encoding="utf-8") as fh:
        try:
            return json.loads(fh.readline()).get("key")
        except (ValueError, AttributeError):
            return None


def add_args(p) -> None:
    common.add_common_args(p, NAME, "sft-adapter")
    p.add_argument("--base", help="override the recipe's base_model (a hub id or local folder)")
    p.add_argument("--past", choices=["gold", "retrieval"], help="override how the past events are chosen")
    p.add_argument("--epochs", type=float, help="override the recipe's epochs")
    p.add_argument("--max-instances", type=int, help="use at most this many instances")
    p.add_argument("--stop-after", type=int, help="stop after this many optimizer steps (rerun to continue)")
    p.add_argument("--fresh", action="store_true", help="ignore existing checkpoints and start over")
    p.add_argument("--prepare-only", action="store_true",
                   help="only build OUT/examples.jsonl (e.g. while an endpoint the memory needs is up), do not train")


def run(args, cfg) -> int:
    recipe = load_recipe(args.recipe_path, base_model=args.base, past=args.past, epochs=args.epochs,
                         max_instances=args.max_instances)
    instances = common.training_data(args, cfg, recipe.max_instances or cfg.training.train_instances).instances
    out = common.out_path(args, cfg, "sft-adapter")
    mcfg = cfg
    if recipe.past == "retrieval" and recipe.memory_profile:
        from core.config import ConfigError, load_config

        try:
            mcfg = load_config(resolve_path(recipe.memory_profile))
        except ConfigError as exc:
            raise TrainingError(f"memory_profile: {exc}") from None
    tok = load_tokenizer(recipe.base_model)
    try:
        rows, dropped = prepare_rows(instances, recipe, mcfg, tok, out)
    except OSError as exc:  # e.g. memory artifacts that are not trained yet
        raise TrainingError(f"cannot build the examples: {exc}") from None
    if args.prepare_only:
        print(f"sft: {len(rows)} examples ({dropped} longer than max_length) in {out / 'examples.jsonl'}")
        return 0
    if not rows:
        raise TrainingError(f"no example fits max_length={recipe.max_length}")
    meta, _ = train(rows, recipe, out, tok, stop_after=args.stop_after, fresh=args.fresh)
    if int(os.environ.get("RANK", "0")) == 0:
        m = meta.metrics
        state = "saved adapter to" if m["complete"] else "stopped early; rerun to continue; checkpoint in"
        print(f"sft: {m['examples']} examples ({dropped} too long), {m['steps']}/{m['total_steps']} steps "
              f"on {m['device']} x{m['world_size']} ({m['dtype']}), loss {m['loss_first']} -> "
              f"{m['loss_last']} in {meta.seconds} s; {state} {out}")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m training.recipes.sft` / `torchrun ... -m training.recipes.sft`: the same as `promem train sft`."""
    import argparse

    from core.config import DEFAULT_CONFIG, ConfigError, load_config

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="python -m training.recipes.sft", description=__doc__.splitlines()[0])
    p.add_argument("-c", "--config", default=str(DEFAULT_CONFIG), help="profile YAML (default: configs/cpu.yaml)")
    add_args(p)
    args = p.parse_args(argv)
    try:
        return run(args, load_config(args.config))
    except (ConfigError, TrainingError) as exc:
        print(f"{p.prog}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
