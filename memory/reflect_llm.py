"""Reflection through a language model (the GPU profile's path of memory/reflect.py).

One call per day: the prompt (memory/prompts/reflection.v1.txt) holds the day's events and the user's
live intentions, each a JSON line with '<' and '>' escaped, between markers, so a caption or transcript
reads as quoted data and cannot close a block (sentences addressed to the assistant were already
withheld by core/directives.py when the event was read). The answer is parsed into ReflectionOut and
every item is checked against the ids the prompt showed: an item naming an unknown event or intention,
an event that already holds an intention, or a settling event that is not later than the formation is
dropped with a reason, and the rest is kept. Nothing here writes to the store.
"""
from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Annotated, Sequence

from pydantic import BaseModel, Field, StringConstraints

from core.formats import Event
from core.jsonio import quote_untrusted as quote
from memory.construct.llm import NoUsableAnswer, ask_json, parse
from memory.intentions import IntentionRecord
from memory.store import FoundIntention, FoundLink

PROMPT = Path(__file__).resolve().parent / "prompts" / "reflection.v1.txt"
MODEL_SCORE = 1.0  # the score of an intention or state change the model names (it gives no probability)

Id = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]


class MissedOut(BaseModel):
    event: Id  # where the intention formed
    gist: Text
    cues: list[Text] = Field(default_factory=list, max_length=5)


class ResolvedOut(BaseModel):
    intention: Id  # a stored intention's id, or the event id where it formed
    by: Id  # the event that settled it


class ReflectionOut(BaseModel):
    missed: list[MissedOut] = Field(default_factory=list, max_length=50)
    resolved: list[ResolvedOut] = Field(default_factory=list, max_length=50)


class TriggerCue(BaseModel):
    """A trigger cue the model gave for an intention it found (stored as an event cue of that event)."""

    event_id: str
    text: str


class Findings(BaseModel):
    """What a checked answer adds (nothing written yet) and why the items it drops were dropped."""

    intentions: list[FoundIntention] = []
    links: list[FoundLink] = []
    cues: list[TriggerCue] = []
    dropped: list[str] = []


class ModelFailed(RuntimeError):
    """The model gave no usable answer for a day (timeout, HTTP error, or malformed twice)."""


def render_prompt(day: date, events: Sequence[Event], live: Sequence[IntentionRecord],
                  template: str | None = None) -> str:
    template = PROMPT.read_text(encoding="utf-8") if template is None else template
    values = {
        "day": quote(day.isoformat()),
        "intentions": "\n".join(quote({"id": r.id, "event": r.evidence[0], "formed": r.formed_at, "gist": r.gist})
                                for r in live) or "(none)",
        "events": "\n".join(quote({"id": e.id, "time": e.time, "location": e.location, "seen": e.visual,
                                    "heard": e.audio}) for e in events) or "(none)",
    }
    # one pass: a value that happens to hold "{events}" is never substituted into
    return re.sub(r"\{(day|intentions|events)\}", lambda m: values[m.group(1)], template)


def parse_reflection(text: str) -> ReflectionOut:
    """Raises MalformedOutput when the answer holds no JSON object of the ReflectionOut shape."""
    return parse(ReflectionOut, text)


def check(out: ReflectionOut, events: Sequence[Event], live: Sequence[IntentionRecord],
          have: set[str]) -> Findings:
    """Keep the items that name the day's events and the live intentions as they are.

    have: event ids of the day that already hold an intention (a missed one there is not added: a rerun,
    whose model may word the gist differently, adds nothing twice)."""
    at = {e.id: e.dt for e in events}
    by_id = {r.id: r.evidence[0] for r in live}
    live_events = set(by_id.values())
    f = Findings()
    for m in out.missed:
        if m.event not in at:
            f.dropped.append(f"missed intention at unknown event {m.event!r}")
        elif m.event in have or any(i.event_id == m.event for i in f.intentions):
            f.dropped.append(f"missed intention at {m.event}: that event already holds one")
        else:
            f.intentions.append(FoundIntention(m.event, m.gist, MODEL_SCORE))
            f.cues += [TriggerCue(event_id=m.event, text=c) for c in dict.fromkeys(m.cues)]
    found = {i.event_id for i in f.intentions}
    settled: set[str] = set()
    for r in out.resolved:
        src = by_id.get(r.intention, r.intention)
        if src not in live_events and src not in found:
            f.dropped.append(f"resolution of unknown intention {r.intention!r}")
        elif r.by not in at:
            f.dropped.append(f"resolution of {r.intention} by unknown event {r.by!r}")
        elif src in at and at[r.by] <= at[src]:
            f.dropped.append(f"resolution of {r.intention} by {r.by}, which is not later than where it formed")
        elif src not in settled:
            settled.add(src)
            f.links.append(FoundLink(src, r.by, MODEL_SCORE))
    return f


def ask(llm, prompt: str, what: str) -> ReflectionOut:
    """One retry on a malformed answer; a failed call (timeout, HTTP error) is not repeated."""
    try:
        return ask_json(llm, prompt, ReflectionOut, what, retry_failed_call=False)
    except NoUsableAnswer as exc:
        raise ModelFailed("; ".join(exc.attempts)) from None
