"""Compose the spoken message from the evidence: what (the evidence event's own words), when
(the day and time it was noticed), why now (where the user is). No language model is needed,
and every content word of the evidence survives, so the user can recognise the intention.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Sequence

from core.formats import Event

MAX_WHAT = 220
MAX_NOW = 110


def part_of_day(dt: datetime) -> str:
    h = dt.hour
    if h < 5:
        return "night"
    if h < 12:
        return "morning"
    if h < 17:
        return "afternoon"
    if h < 21:
        return "evening"
    return "night"


def when_phrase(then: datetime, now: datetime) -> str:
    then_local = then.astimezone(now.tzinfo)
    days = (now.date() - then_local.date()).days
    pod = part_of_day(then_local)
    if days <= 0:
        return "earlier today" if pod == part_of_day(now) else f"this {pod}"
    if days == 1:
        return "last night" if pod == "night" else f"yesterday {pod}"
    if days < 7:
        return f"on {then_local.strftime('%A')} {pod}"
    return f"on {then_local.strftime('%A %d %B')}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:-") + "..."


def _first_sentence(text: str) -> str:
    m = re.match(r"(.+?[.!?])(\s|$)", text.strip())
    return m.group(1) if m else text.strip()


def _user_speech(audio: str) -> str:
    """The wearer's own words when diarization labelled them, else the whole transcript."""
    mine = re.findall(r"\[user\]\s*([^\[]+)", audio)
    return " ".join(s.strip() for s in mine) if mine else re.sub(r"\[[^\]]+\]\s*", "", audio).strip()


def what_phrase(e: Event) -> str:
    parts = []
    if e.visual:
        parts.append(_clip(e.visual, MAX_WHAT))
    if e.audio:
        speech = _user_speech(e.audio) or e.audio
        parts.append(f'("{_clip(speech, 140)}")')
    return " ".join(parts)


# What to do, from the kind of intention the evidence shows. Patterns are checked in order and at
# most two suggestions are kept, so a message stays one or two short sentences.
ACTIONS: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), a) for p, a in [
    (r"\b(pick ?up|collect|parcel|package|ready for collection|dry.?clean)", "Maybe pick it up or collect it now."),
    (r"\b(broken|broke|split|torn|tear|flat|puncture|leak|zip|crack|popped|snapped|worn)", "Maybe get it fixed or repaired, or buy a new one."),
    (r"\b(ran out|run out|out of|empty|last one|last ones|used up|finished|no more|expired|missing|lost)", "Maybe buy or get a new one while you can."),
    (r"\b(lend|borrow|bring|give (it|them) back|return|forgot)", "Remember to bring it or give it back."),
    (r"\b(hurts?|pain|ache|sore|doctor|dentist|appointment|physio|clinic)", "Maybe call to book an appointment."),
    (r"\b(birthday|call (him|her|them|back)|text|message|anniversary)", "Maybe call or message them."),
    (r"\b(deadline|due|submit|send|form|receipt|timesheet|expense|renew|pay|bill)", "Maybe get it done and sent now."),
    (r"\b(need|needs|should|have to|must|don't forget|remember)", "Maybe take care of it now."),
]]


def action_phrase(evidence: Sequence[Event]) -> str:
    text = " ".join(f"{e.visual or ''} {e.audio or ''}" for e in evidence)
    picked = [a for pat, a in ACTIONS if pat.search(text)]
    return " ".join(dict.fromkeys(picked[:2]))


def now_phrase(current: Event) -> str:
    if current.location and current.visual:
        return f"You're at {current.location} ({_clip(_first_sentence(current.visual), MAX_NOW)})"
    if current.location:
        return f"You're at {current.location}"
    if current.visual:
        return f"Right now: {_clip(_first_sentence(current.visual), MAX_NOW)}"
    return "Now might be a good moment"


def compose_message(evidence: Sequence[Event], current: Event) -> str:
    """e.g. 'You're at Grand Ave (Imani walks past a party-supply shop...). Remember yesterday evening
    at kitchen: ... an empty birthday-candle box. ("We used the last ones...") Maybe buy or get a new one while you can.'"""
    now = current.dt
    items = []
    for e in sorted(evidence, key=lambda e: e.dt):
        where = f" at {e.location}" if e.location else ""
        items.append(f"{when_phrase(e.dt, now)}{where}: {what_phrase(e)}")
    if not items:
        return now_phrase(current) + "."
    body = " Also, ".join(items)
    action = action_phrase(evidence)
    msg = f"{now_phrase(current)}. Remember {body}"
    return f"{msg} {action}" if action else msg
