"""A readable timeline of the loop's decisions: one line per event, the agent's words when it speaks."""
from __future__ import annotations

from core.formats import Decision, Event


def _short(text: str, n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 3] + "..."


def timeline_line(event: Event, decision: Decision, width: int = 70) -> str:
    when = event.dt.strftime("%a %d %b %H:%M")
    where = f"[{event.location}] " if event.location else ""
    seen = _short(where + (event.visual or event.audio or ""), width)
    if decision.assist:
        return f"{when}  {seen}\n{'':17}>> SPEAKS: {decision.message}  (evidence: {', '.join(decision.evidence)})"
    tag = "silent"
    if decision.error is not None:
        tag = f"silent (error: {_short(decision.error, 60)})"
    elif decision.guard is not None:
        tag = "silent (guard: already raised)"
    return f"{when}  {seen:<{width}}  .. {tag}"
