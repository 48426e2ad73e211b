"""ContextAgent Benchmark (CAB) contexts -> one-event CPMBench instances, for decision metrics only.

`Proactive index` true -> a `positive` instance whose single intention is formed at the decision event
itself, with CAB's `Response` as reference and no keyword groups (the validator and the keyword judge
treat empty `keywords` as "any assistance addresses it": only the assist/silent decision is judged);
false -> `no_formation`; medium -> dropped (ContextAgent reports on true/false only).

CAB has no timestamps: every event gets CAB_TIME (documented, arbitrary) and no location.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from bench.importers import ImportError_, ImportResult, load_json, require
from core.formats import Event, Instance, Intention

FILES = {"test": "cab_test.json", "train": "cab_train.json"}
CAB_TIME = "2025-01-01T12:00:00+00:00"
# CAB's 9 scenario categories onto the project's 8
CATEGORY_MAP = {
    "Work": "work", "Leisure": "leisure", "Outdoors": "leisure", "Chitchat": "social", "Health": "health",
    "Cooking": "food", "Shopping": "shopping", "Travel": "transit", "Others": "daily_life",
}
REQUIRED = ("Category", "Vision", "Audio", "Proactive index")


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return " ".join(str(x).strip() for x in v if str(x).strip())
    return str(v).strip()


def convert(key: str, ctx: dict, split: str) -> Instance | None:
    """One CAB context; None for `medium`; ValueError naming the key when it cannot be converted."""
    missing = [k for k in REQUIRED if k not in ctx]
    if missing:
        raise ValueError(f"missing key(s) {', '.join(repr(k) for k in missing)}")
    index = str(ctx["Proactive index"]).strip().lower()
    if index == "medium":
        return None
    if index not in ("true", "false"):
        raise ValueError(f"'Proactive index' {ctx['Proactive index']!r} is not true/false/medium")
    category = CATEGORY_MAP.get(str(ctx["Category"]))
    if category is None:
        raise ValueError(f"unknown Category {ctx['Category']!r} (known: {', '.join(CATEGORY_MAP)})")
    visual, audio = _text(ctx.get("Vision")), _text(ctx.get("Audio"))
    if not visual and not audio:
        raise ValueError("both 'Vision' and 'Audio' are empty")
    event = Event(id="e1", time=CAB_TIME, visual=visual, audio=audio)
    variant = "positive" if index == "true" else "no_formation"
    intentions = []
    if variant == "positive":
        response = _text(ctx.get("Response"))
        # one train context has no Response; its Thoughts say what help was meant
        reference = response if response and response != "None" else _text(ctx.get("Thoughts"))
        if not reference:
            raise ValueError("a proactive context with neither 'Response' nor 'Thoughts'")
        intentions = [Intention(id="i1", formation="e1", state_change=None, reference=reference, keywords=[])]
    return Instance(id=f"cab-{split}-{key}-{variant}", category=category, variant=variant,
                    persona=_text(ctx.get("Personas")), events=[event], decision_event="e1", intentions=intentions,
                    source={"dataset": "CAB", "split": split, "key": key,
                            "proactive_score": ctx.get("Proactive score"), "cab_category": ctx["Category"]})


def iter_load(split: str = "test", src: str | Path | None = None) -> Iterator[Instance | str | None]:
    """Instances in file order; a message for a skipped context; None for a dropped (medium) one."""
    if split not in FILES:
        raise ImportError_(f"CAB split must be one of {', '.join(FILES)}, got {split!r}")
    path = require([FILES[split]], src) / FILES[split]
    data = load_json(path)
    if isinstance(data, list):  # some copies are a list of contexts
        data = {f"example-{i}": c for i, c in enumerate(data)}
    if not isinstance(data, dict):
        raise ImportError_(f"{path}: expected a JSON object of contexts, got {type(data).__name__}")
    for key, ctx in data.items():
        if not isinstance(ctx, dict):
            yield f"{path}: context {key!r}: expected an object, got {type(ctx).__name__}"
            continue
        try:
            yield convert(str(key), ctx, split)
        except ValueError as exc:
            yield f"{path}: context {key!r}: {exc}"


def load(split: str = "test", src: str | Path | None = None) -> ImportResult:
    out = ImportResult()
    for item in iter_load(split, src):
        if item is None:
            out.dropped += 1
        elif isinstance(item, str):
            out.skipped.append(item)
        else:
            out.instances.append(item)
    return out
