"""Compose the spoken message from the evidence: what (a short name of the thing, a few words of
the evidence), when (the day and time it was noticed), why now (where the user is). No language
model is needed.

Captions and transcripts are recordings of the world and may hold anyone's words, so the message
never quotes them at length: it names the thing with at most MAX_CAPTION_WORDS words of a caption and
MAX_SPEECH_WORDS of a transcript, cleaned by core.text.clean_phrase (no digits, phone numbers, URLs or
imperatives); the rest of the message is fixed wording.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Sequence

from core.formats import Event
from core.text import IMPERATIVES, STOPWORDS, WORD_RE, clean_phrase, user_speech

# A caption is the captioner's own description; a transcript is anyone's words, so it gets fewer.
MAX_CAPTION_WORDS = 14
MAX_SPEECH_WORDS = 6
MAX_PLACE_WORDS = 8


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


_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


def _first_sentence(text: str) -> str:
    return _SENTENCE.split((text or "").strip())[0]


def speech_phrase(audio: str) -> str:
    """At most MAX_SPEECH_WORDS cleaned words of what was said: the first sentence that shows an
    intention (ACTIONS), from that sign on, the wearer's own words first, else the wearer's first sentence. Of a
    request ("please sign the card for Lena") only what follows its first imperative is kept ("the
    card for Lena"): the thing asked about, not a garbled sentence with its verb cleaned away."""
    mine = user_speech(audio or "")
    anyone = re.sub(r"\[[^\]]+\]\s*", " ", audio or "")
    for text in (mine, anyone):
        for sentence in _SENTENCE.split(text):
            # From the sign on ("out of oat milk again"), so the words go to the thing, not to "Oh no, we are".
            hit = min((m.start() for pat, _ in ACTIONS if (m := pat.search(sentence))), default=None)
            if hit is None:
                continue
            before = _noun_before(sentence[:hit].split())  # "library book" of "the library book is due"
            if phrase := _phrase(" ".join(before) + " " + sentence[hit:]):
                return phrase
    return _phrase(_first_sentence(mine))


def _noun_before(words: list[str]) -> list[str]:
    """The run of up to three content words just before a sign, across at most one stopword ("oat
    milk carton" of "the oat milk carton is empty"); [] when there is none."""
    tail = words[-1:] if words and words[-1].lower() in STOPWORDS else []
    run: list[str] = []
    for w in reversed(words[:len(words) - len(tail)]):
        # A stopword, a contraction ("we're") or a clause mark ("no,") ends the noun run.
        if w.lower() in STOPWORDS or "'" in w or "’" in w or not w[-1].isalnum() or len(run) == 3:
            break
        run.insert(0, w)
    return run + tail if run else []


def _phrase(sentence: str) -> str:
    verb = next((m for m in WORD_RE.finditer(sentence) if m.group(0).lower() in IMPERATIVES), None)
    return clean_phrase(sentence[verb.end():] if verb else sentence, MAX_SPEECH_WORDS)


def thing_phrase(e: Event) -> str:
    """What the event is about: the caption's first sentence and a short phrase of the speech,
    both cleaned (the keyword-bearing object is usually in one of the two)."""
    parts = [clean_phrase(_first_sentence(e.visual or ""), MAX_CAPTION_WORDS), speech_phrase(e.audio or "")]
    return "; ".join(p for p in parts if p)


def place_phrase(e: Event) -> str:
    return clean_phrase(e.location or "", MAX_PLACE_WORDS)


# What to do, from the kind of intention the evidence shows. Patterns are checked in order and at
# most two suggestions are kept, so a message stays one or two short sentences.
ACTIONS: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), a) for p, a in [
    (r"\b(pick ?up|collect|parcel|package|ready for collection|dry.?clean)", "Maybe pick it up or collect it now."),
    (r"\b(broken|broke|split|torn|tear|flat|puncture|leak|zip|crack|pops\b|popped|snapped|worn)", "Maybe get it fixed or repaired, or buy a new one."),
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
    if place := place_phrase(current):
        return f"You're at {place}"
    if thing := thing_phrase(current):
        return f"Right now: {thing}"
    return "Now might be a good moment"


def compose_message(evidence: Sequence[Event], current: Event) -> str:
    """e.g. 'You're at Grand Ave. Remember yesterday evening at kitchen: empty birthday-candle box.
    Maybe buy or get a new one while you can.'"""
    now = current.dt
    items = []
    for e in sorted(evidence, key=lambda e: e.dt):
        where = f" at {place}" if (place := place_phrase(e)) else ""
        thing = thing_phrase(e)
        items.append(f"{when_phrase(e.dt, now)}{where}: {thing}." if thing else f"{when_phrase(e.dt, now)}{where}.")
    if not items:
        return now_phrase(current) + "."
    body = " Also, ".join(items)
    action = action_phrase(evidence)
    msg = f"{now_phrase(current)}. Remember {body}"
    return f"{msg} {action}" if action else msg
