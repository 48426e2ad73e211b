"""Parse a model's answer (a reasoning trace, then `Decision: {json}`) into a Decision.

Anything malformed yields silence with an "error" key: a garbled answer must never make
the wearable speak.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

THINK_RE = re.compile(r"<think>(.*?)</think>", re.S)
DECISION_RE = re.compile(r"decision\s*:", re.I)
REASONING_RE = re.compile(r"reasoning\s*:\s*(.*?)(?=decision\s*:|$)", re.I | re.S)


class ParseError(ValueError):
    pass


@dataclass
class Parsed:
    assist: bool
    message: Optional[str]
    evidence: list[str]
    reasoning: str
    warnings: list[str] = field(default_factory=list)


def _json_objects(text: str):
    """Every top-level {...} that json can decode, in order of appearance."""
    dec = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            yield obj
        i = text.find("{", end)


def _as_bool(v) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "yes", "false", "no"):
        return v.strip().lower() in ("true", "yes")
    raise ParseError(f"'assist' must be true or false, got {v!r}")


def parse_output(text: str, known_ids: Sequence[str] = ()) -> Parsed:
    """Raise ParseError when no usable decision is found; evidence ids not in known_ids are dropped."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty model output")
    think = " ".join(m.strip() for m in THINK_RE.findall(text))
    body = THINK_RE.sub("", text)
    # Prefer the object after the last "Decision:"; a trace may quote JSON-like text earlier.
    marks = list(DECISION_RE.finditer(body))
    tail = body[marks[-1].end():] if marks else body
    candidates = [o for o in _json_objects(tail) if "assist" in o] or [o for o in _json_objects(body) if "assist" in o]
    if not candidates:
        snippet = " ".join(text.split())[:120]
        raise ParseError(f"no decision object with 'assist' found in model output: {snippet!r}")
    obj = candidates[0] if marks else candidates[-1]
    assist = _as_bool(obj.get("assist"))
    message = obj.get("message")
    if message is not None and not isinstance(message, str):
        raise ParseError(f"'message' must be a string or null, got {type(message).__name__}")
    message = (message or "").strip() or None
    if assist and not message:
        raise ParseError("assist is true but the message is empty")
    raw_ev = obj.get("evidence") or []
    if isinstance(raw_ev, str):
        raw_ev = [raw_ev]
    if not isinstance(raw_ev, list):
        raise ParseError(f"'evidence' must be a list of event ids, got {type(raw_ev).__name__}")
    warnings = []
    evidence = []
    known = set(known_ids)
    for e in raw_ev:
        e = str(e)
        if known and e not in known:
            warnings.append(f"evidence id {e!r} is not among the recalled events; dropped")
            continue
        if e not in evidence:
            evidence.append(e)
    m = REASONING_RE.search(body)
    reasoning = " ".join(((think + " ") if think else "").split() + (m.group(1).split() if m else []))
    return Parsed(assist, message if assist else None, evidence if assist else [], reasoning, warnings)
