"""Compose the spoken message from the evidence: one sentence of at most MAX_WORDS words that says why
now (where the user is), when the thing came up (a day and part of day) and what it is (a short name
of the thing from the event it rests on), then what might be done. No language model is needed.

    "You're at Fresh Market - out of oat milk, on Monday evening; maybe buy or get a new one."

The length is kept by construction: each part has a word budget (the place MAX_PLACE_WORDS, the
thing what the fixed parts leave, its transcript part at most MAX_SPEECH_WORDS, its caption part at
most MAX_CAPTION_WORDS), so nothing is cut after the sentence is built.

Captions and transcripts are recordings of the world and may hold anyone's words, so the message
never quotes them at length: every phrase taken from them is cleaned by core.text.clean_phrase (no
digits, phone numbers, URLs or imperatives); the rest of the message is fixed wording.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from core.formats import Event
from core.text import IMPERATIVES, STOPWORDS, WORD_RE, clean_phrase, user_speech

MAX_WORDS = 25  # the whole spoken sentence
# A caption is the captioner's own description; a transcript is anyone's words, so it gets fewer.
MAX_CAPTION_WORDS = 12
MAX_SPEECH_WORDS = 6
MAX_PLACE_WORDS = 4


def word_count(text: str) -> int:
    """Words as spoken: letter or digit runs ("You're", "birthday-candle" count once; a dash not at all)."""
    return len(re.findall(r"[A-Za-z0-9][A-Za-z0-9'’-]*", text))


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
    # no sign: the wearer's sentence that says the most ("My earbuds are dying", not "Can you hear me?")
    return max((_phrase(x) for x in _SENTENCE.split(mine)), key=lambda x: len(x.split()), default="")


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


def _sign_clause(text: str) -> tuple[int, str]:
    """(index of the first sentence that shows an intention (ACTIONS), that sentence from the noun run
    before its sign on): "cold sore cream is finished" of "Dabbing at a cold sore; cold sore cream is
    finished", so the words that name the thing come first and a short budget keeps them. (-1, "")
    when no sentence shows one."""
    for n, sentence in enumerate(_SENTENCE.split((text or "").strip())):
        hit = min((m.start() for pat, _ in ACTIONS if (m := pat.search(sentence))), default=None)
        if hit is not None:
            return n, " ".join(_noun_before(sentence[:hit].split())) + " " + sentence[hit:]
    return -1, ""


def thing_phrase(e: Event, max_words: int = MAX_CAPTION_WORDS + MAX_SPEECH_WORDS) -> str:
    """What the event is about in at most max_words words: a cleaned phrase of the caption and one of
    the speech (the keyword-bearing object is usually in one of the two). Of the caption: its first
    sentence whole when that sentence shows the intention and fits beside the speech phrase, else the
    sentence that shows it from its thing on, else the first sentence; a speech phrase that only
    repeats the caption is left out."""
    max_words = max(0, max_words)
    speech = clean_phrase(speech_phrase(e.audio or ""), max_words)
    whole = clean_phrase(_first_sentence(e.visual or ""), MAX_CAPTION_WORDS + 1)
    if set(_words(speech)) <= set(_words(whole)):
        speech = ""
    room = min(MAX_CAPTION_WORDS, max_words - word_count(speech))
    if e.visual and room < 3 <= max_words:  # a caption of one or two words names nothing
        speech = clean_phrase(speech, max(0, max_words - 3))
        room = max_words - word_count(speech)
    at, clause = _sign_clause(e.visual or "")
    fits = word_count(whole) <= room
    if at < 0 or (at == 0 and fits):
        caption = whole if fits else clean_phrase(whole, max(0, room))
    else:
        caption = clean_phrase(clause, max(0, room))
    return "; ".join(p for p in (caption, speech) if p)


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD_RE.findall(text)]


def place_phrase(e: Event) -> str:
    return clean_phrase(e.location or "", MAX_PLACE_WORDS)


# What might be done, from the kind of intention the evidence shows; the first that matches is said.
ACTIONS: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), a) for p, a in [
    (r"\b(pick ?up|collect|parcel|package|ready for collection|dry.?clean)", "maybe pick it up or collect it"),
    (r"\b(broken|broke|split|torn|tear|flat|puncture|leak|zip|crack|pops\b|popped|snapped|worn)", "maybe repair it or buy new"),
    (r"\b(ran out|run out|out of|empty|last one|last ones|used up|finished|no more|expired|missing|lost)", "maybe buy or get a new one"),
    (r"\b(lend|borrow|bring|give (it|them) back|return|forgot)", "remember to bring or return it"),
    (r"\b(hurts?|pain|ache|sore|doctor|dentist|appointment|physio|clinic)", "maybe book an appointment"),
    (r"\b(birthday|call (him|her|them|back)|text|message|anniversary)", "maybe call or message them"),
    (r"\b(deadline|due|submit|send|form|receipt|timesheet|expense|renew|pay|bill)", "maybe get it done and sent"),
    (r"\b(need|needs|should|have to|must|don't forget|remember)", "maybe take care of it now"),
]]
NOW_WORDS = 8  # "Right now: ..." when the current moment has no place, so the past thing keeps its words


def action_phrase(evidence: Sequence[Event]) -> str:
    text = " ".join(f"{e.visual or ''} {e.audio or ''}" for e in evidence)
    return next((a for pat, a in ACTIONS if pat.search(text)), "")


def now_phrase(current: Event, max_words: int = NOW_WORDS) -> str:
    """Why now: where the user is, else what is going on (in at most max_words words)."""
    if place := place_phrase(current):
        return f"You're at {place}"
    if thing := thing_phrase(current, max_words - 2):
        return f"Right now: {thing}"
    return "Now might be a good moment"


@dataclass(frozen=True)
class Composed:
    """The spoken sentence and the events it rests on (a decision's evidence lists only these)."""

    message: str
    evidence: list[str]


def compose_message(evidence: Sequence[Event], current: Event) -> Composed:
    """One sentence from the first evidence event (the one the decision rests on most), e.g.
    "You're at Grand Ave - empty birthday-candle box, yesterday evening; maybe buy or get a new one." """
    if not evidence:
        return compose_now(current)
    e = evidence[0]
    now = now_phrase(current)
    when = when_phrase(e.dt, current.dt)
    action = action_phrase([e])
    # the dash counts too, so the sentence is short by any count (len(message.split()) included)
    thing = thing_phrase(e, MAX_WORDS - 1 - word_count(f"{now} {when} {action}"))
    msg = f"{now} - {thing}, {when}" if thing else f"{now} - something came up {when}"
    return Composed(f"{msg}; {action}." if action else f"{msg}.", [e.id])


def compose_now(current: Event) -> Composed:
    """The now head's sentence: the moment alone calls for help (it is its own evidence)."""
    action = action_phrase([current]) or "maybe I can help with this now"
    return Composed(f"{now_phrase(current, MAX_WORDS - 1 - word_count(action))} - {action}.", [current.id])
