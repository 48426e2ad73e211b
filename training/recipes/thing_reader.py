"""Train the thing reader (reasoner/gate/thing_reader.py): which words of a formation event name the thing, and which action phrase fits.

Each intention of the training instances gives one example, its formation event's caption and
transcript: the words that match any of its keyword groups (as the keyword judge matches them) are
the words to mark, and the action phrase to pick is the one for the first verb of its second group
that ACTION_VERBS knows (the verb the scenario's author put first: "buy" of buy/get/pick up), none
where it knows none. Not every phrase the judge would accept: the widest one then wins everywhere
("maybe repair it or buy new" for a blood test, BENCHMARKS.md "The thing reader"). Scenarios are split: a held-out share is never trained on and reports
how often the marked words name the thing and how often the picked action is the labelled one; the
model trained on the rest is kept. Writes reader.safetensors and meta.json to
<cfg.training.artifacts>/thing-reader.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field

from core.artifacts import ArtifactMeta, write_meta
from core.formats import Instance
from core.jsonio import replace_dir, staging_dir
from training import data
from training import recipe as common
from training.errors import TrainingError
from training.finetune import FinetuneSettings, run_steps

NAME = "thing-reader"


class ThingReaderRecipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    held_out: float = Field(0.15, ge=0, lt=1)  # share of scenarios kept out of training, to report on
    mark_weight: float = 5.0  # marked tokens are few: their loss counts this much more
    action_weight: float = 0.3  # the action head's share of the loss: at 1.0 it pulled the shared encoder off the marks
    finetune: FinetuneSettings = Field(default_factory=lambda: FinetuneSettings(
        max_length=160, epochs=4, threads=2, budget_s=300))


# The verbs that name each action phrase's kind of action (reasoner.gate.compose.ACTIONS).
ACTION_VERBS: dict[str, tuple[str, ...]] = {
    "maybe pick it up or collect it": ("pick up", "pick", "collect", "fetch"),
    "maybe repair it or buy new": ("repair", "fix", "mend", "patch", "glue", "stitch", "sew"),
    "maybe buy or get a new one": ("buy", "get", "grab", "purchase", "order", "replace", "refill", "restock",
                                   "top up", "stock up"),
    "remember to bring or return it": ("return", "bring", "give back", "take back", "hand", "give", "lend",
                                       "drop off", "take"),
    "maybe book an appointment": ("book", "appointment", "reserve", "schedule", "check", "see", "visit"),
    "maybe call or message them": ("call", "text", "message", "reply", "tell", "ask", "wish", "rsvp",
                                   "mention", "invite"),
    "maybe get it done and sent": ("pay", "submit", "send", "post", "file", "renew", "sign", "register",
                                   "mail", "courier", "ship", "dispatch"),
}


def action_label(keywords: list[list[str]], actions: Sequence[str]) -> int:
    """Index in `actions` of the phrase for the first verb of the second keyword group that
    ACTION_VERBS knows ("repaired" is "repair"); -1 when it knows none."""
    for term in (keywords[1] if len(keywords) > 1 else []):
        t = term.lower().strip()
        for phrase, verbs in ACTION_VERBS.items():
            if phrase in actions and any(t == v or t.startswith(v + " ") or (t.startswith(v) and len(t) - len(v) <= 2)
                                         for v in verbs):
                return list(actions).index(phrase)
    return -1


@dataclass(frozen=True)
class ReaderExample:
    text: str
    marks: list[tuple[int, int]]  # character spans of keyword matches
    action: int  # index of the action phrase to pick (action_label), -1 for none
    keywords: list[list[str]]


def add_args(p) -> None:
    common.add_common_args(p, NAME, "thing-reader")


def load_recipe(path=None, **overrides) -> ThingReaderRecipe:
    return common.load_recipe(ThingReaderRecipe, NAME, path, **overrides)


def examples(instances: Sequence[Instance], actions: Sequence[str]) -> list[ReaderExample]:
    """One per distinct formation event text (the variants of a scenario share it)."""
    from core.text import keyword_pattern
    from reasoner.gate.thing_reader import reader_text

    out, seen = [], set()
    for inst in instances:
        for it in inst.intentions:
            text = reader_text(inst.event(it.formation))
            if not text or text in seen:
                continue
            seen.add(text)
            marks = [(m.start(), m.end()) for group in it.keywords for term in group for m in keyword_pattern(term).finditer(text)]
            out.append(ReaderExample(text, marks, action_label(it.keywords, actions), it.keywords))
    return out


def _targets(model, batch: Sequence[ReaderExample]):
    import torch

    enc, offsets = model.tokenize([x.text for x in batch])
    marks = torch.zeros(offsets.shape[:2])
    for i, x in enumerate(batch):
        for j, (a, b) in enumerate(offsets[i].tolist()):
            if b > a and any(a < e and b > s for s, e in x.marks):
                marks[i, j] = 1.0
    return enc, marks, torch.tensor([x.action for x in batch])


def fit(train: Sequence[ReaderExample], recipe: ThingReaderRecipe, actions: Sequence[str], progress: bool = True):
    """A fresh reader fine-tuned on `train` (both heads, one loss); (reader, training.finetune.Steps)."""
    import torch

    from reasoner.gate.thing_reader import ThingReader

    s = recipe.finetune
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(s.threads)
    torch.manual_seed(s.seed)
    try:
        model = ThingReader(actions, s.base, s.max_length)
        model.tune_all_but_embeddings()
        model.net.train()
        weight = torch.tensor(recipe.mark_weight)

        def step_loss(idx: list[int]):
            enc, marks, acts = _targets(model, [train[i] for i in idx])
            tok, act = model.logits(enc)
            mask = enc["attention_mask"].float()
            loss = (torch.nn.functional.binary_cross_entropy_with_logits(tok, marks, pos_weight=weight, reduction="none")
                    * mask).sum() / mask.sum()
            if (acts >= 0).any():  # a batch where no action is labelled has only the marks to learn
                loss = loss + recipe.action_weight * torch.nn.functional.cross_entropy(act, acts, ignore_index=-1)
            return loss

        steps = run_steps([p for p in model.net["encoder"].parameters() if p.requires_grad],
                          [*model.net["tokens"].parameters(), *model.net["action"].parameters()],
                          [len(x.text) for x in train], s, step_loss, t0, "train thing reader", progress)
        model.net.eval()
    finally:
        torch.set_num_threads(threads)
    return model, steps


def held_out_figures(model, held: Sequence[ReaderExample]) -> dict:
    """On held-out formations: how often the marked words (as the composer says them) name the
    thing (the first keyword group), and how often the picked action is the labelled one."""
    from core.text import addresses
    from reasoner.gate.compose import READ_WORDS, read_phrase

    if not held:
        return {"held_out_formations": 0}
    readings = model.read_many([x.text for x in held])
    named = sum(addresses(read_phrase(r, READ_WORDS), x.keywords[:1]) for r, x in zip(readings, held))
    labelled = [(r, x) for r, x in zip(readings, held) if x.action >= 0]
    right = sum(model.actions.index(r.action) == x.action for r, x in labelled)
    return {"held_out_formations": len(held), "thing_named": round(100 * named / len(held), 1),
            "action_right": round(100 * right / len(labelled), 1) if labelled else None,
            "action_labelled": len(labelled)}


def train(instances: Sequence[Instance], recipe: ThingReaderRecipe, out, source: str = "", data_hash: str = "",
          progress: bool = True) -> ArtifactMeta:
    from reasoner.gate.compose import ACTION_PHRASES
    from reasoner.gate.thing_reader import VERSION

    t0 = time.time()
    fit_on, held = data.split(instances, recipe.held_out, recipe.finetune.seed)
    train_ex = examples(fit_on, ACTION_PHRASES)
    if not train_ex:
        raise TrainingError("no intentions with a formation event in the training data: nothing to read")
    trained_on = {x.text for x in train_ex}
    held_ex = [x for x in examples(held, ACTION_PHRASES) if x.text not in trained_on]
    model, steps = fit(train_ex, recipe, ACTION_PHRASES, progress)
    tmp = staging_dir(out)
    model.save(tmp)
    meta = ArtifactMeta(kind=NAME, version=VERSION, data=source, data_hash=data_hash, base=recipe.finetune.base,
                        seconds=round(time.time() - t0, 1), recipe=recipe.model_dump(),
                        metrics={"train_formations": len(train_ex), "steps": len(steps.losses),
                                 "stopped_by_budget": steps.stopped_by_budget, "losses": steps.tenths(),
                                 **held_out_figures(model, held_ex)})
    write_meta(tmp, meta)
    replace_dir(tmp, out)
    return meta


def run(args, cfg) -> int:
    recipe = load_recipe(args.recipe_path)
    td = common.training_data(args, cfg)
    out = common.out_path(args, cfg, "thing-reader")
    meta = train(td.instances, recipe, out, td.source, td.data_hash)
    m = meta.metrics
    print(f"thing reader trained on {m['train_formations']} formations in {meta.seconds} s "
          f"(loss {m['losses'][0]} -> {m['losses'][-1]}); held out ({m['held_out_formations']} formations): "
          f"thing named {m.get('thing_named')}%, action right {m.get('action_right')}% "
          f"(of {m.get('action_labelled')} labelled); saved to {out}")
    return 0
