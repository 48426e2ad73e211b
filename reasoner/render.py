"""Render the reasoner prompt: personal context, recalled past events in time order, the current event.

Sensory text is untrusted (anyone near the wearer can speak into it), so every field goes
into the prompt as a JSON string inside tagged blocks, with '<' and '>' escaped
(core.jsonio.quote_untrusted) so that a transcript cannot close a block and pose as instructions.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from importlib import resources
from typing import Sequence

from core.formats import Event
from core.jsonio import quote_untrusted as quote
from core.recall import Recalled

SECTION_SYSTEM = "=== system ==="
SECTION_USER = "=== user ==="


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    system: str
    user: str


@lru_cache(maxsize=8)
def load_prompt(name: str = "reasoner.v1") -> PromptTemplate:
    """Load reasoner/prompts/<name>.txt: a system part and a user part with $placeholders."""
    try:
        text = resources.files("reasoner").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"prompt {name!r} not found in reasoner/prompts/") from None
    if SECTION_SYSTEM not in text or SECTION_USER not in text:
        raise ValueError(f"prompt {name!r} needs '{SECTION_SYSTEM}' and '{SECTION_USER}' sections")
    system, user = text.split(SECTION_USER, 1)
    system = system.split(SECTION_SYSTEM, 1)[1]
    return PromptTemplate(name, system.strip(), user.strip())


def human_gap(delta: timedelta) -> str:
    minutes = int(round(delta.total_seconds() / 60))
    if minutes < 0:
        return "after now"
    days, rem = divmod(minutes, 24 * 60)
    hours, mins = divmod(rem, 60)
    if days:
        return f"{days} d {hours} h before now"
    if hours:
        return f"{hours} h {mins} min before now"
    return f"{mins} min before now"


def event_fields(event: Event) -> dict:
    out = {"id": event.id, "time": event.time}
    if event.location:
        out["location"] = event.location
    if event.visual:
        out["visual"] = event.visual
    if event.audio:
        out["audio"] = event.audio
    return out


def render_past(past: Sequence[Recalled], current: Event) -> str:
    """One JSON object per recalled event, oldest first, with its age and later developments."""
    lines = []
    for r in sorted(past, key=lambda r: (r.event.dt, r.event.id)):
        fields = event_fields(r.event)
        fields["ago"] = human_gap(current.dt - r.event.dt)
        if r.links:
            fields["later"] = [{"event": link.event_id, "kind": link.kind} for link in r.links]
        lines.append(quote(fields))
    return "\n".join(lines) if lines else "(none)"


def render_messages(persona: str, past: Sequence[Recalled], current: Event,
                    prompt: str = "reasoner.v1") -> list[dict[str, str]]:
    tpl = load_prompt(prompt)
    values = {
        "persona": quote(persona or ""),
        "past": render_past(past, current),
        "current": quote(event_fields(current)),
    }
    # safe_substitute: a '$' inside the data is never read as a placeholder (values are inserted once).
    user = string.Template(tpl.user).safe_substitute(values)
    return [{"role": "system", "content": tpl.system}, {"role": "user", "content": user}]
