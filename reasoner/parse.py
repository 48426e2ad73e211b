"""Parse a model's answer (a reasoning trace, then `Decision: {json}` as its last line, the form
reasoner/prompts/reasoner.v1.txt asks for) into a Decision.

Only that final object counts. Anything else (no Decision line, a cut-off or non-object decision,
text after it) yields silence with an "error" key: a garbled answer, or JSON the model echoed
from a transcript, must never make the wearable speak.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

THINK_RE = re.compile(r"<think>(.*?)</think>", re.S)
DECISION_RE = re.compile(r"(?:^|\n)[ \t*#]*decision\s*:", re.I)  # at the start of a line
FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S | re.I)
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


def _final_decision(body: str) -> dict:
    """The JSON object of the one "Decision:" line, with nothing but whitespace (or the closing fence
    of a ```json block) after it. An object anywhere else (an echoed transcript, a quoted example)
    is never taken for the decision, and a second Decision line makes the answer ambiguous."""
    marks = list(DECISION_RE.finditer(body))
    if not marks:
        raise ParseError(f"no decision object: no 'Decision:' line in model output: {_snippet(body)!r}")
    if len(marks) > 1:
        raise ParseError(f"{len(marks)} 'Decision:' lines in model output; expected one, at the end")
    tail = body[marks[0].end():].strip()
    fenced = FENCE_RE.fullmatch(tail)
    if fenced:
        tail = fenced.group(1).strip()
    try:
        obj, end = json.JSONDecoder().raw_decode(tail)
    except json.JSONDecodeError:
        raise ParseError(f"no decision object after the last 'Decision:' (cut off or not JSON): {_snippet(tail)!r}") from None
    if not isinstance(obj, dict) or "assist" not in obj:
        raise ParseError(f"no decision object with 'assist' after the last 'Decision:': {_snippet(tail)!r}")
    if tail[end:].strip():
        raise ParseError(f"text after the decision object: {_snippet(tail[end:])!r}")
    return obj


def _snippet(text: str) -> str:
    return " ".join(text.split())[:120]


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
    obj = _final_decision(body)
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
