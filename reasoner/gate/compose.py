"""Compose the spoken message from the evidence: one sentence of at most MAX_WORDS words that says why
now (where the user is), when the thing came up (a day and part of day) and what it is (a short name
of the thing from the event it rests on), then what might be done. No language model is needed.

    "You're at Fresh Market - out of oat milk, on Monday evening; maybe buy or get a new one."

With a trained thing reader (reasoner/gate/thing_reader.py) the thing is the words it marked (at
most READ_WORDS), and the action the phrase it picked; the rules below add their phrase only where it
marked fewer than READ_ENOUGH words, and name the thing and the action where there is no reader.

The length is kept by construction: each part has a word budget (the place MAX_PLACE_WORDS, the
thing what the fixed parts leave, its transcript part at most MAX_SPEECH_WORDS, its caption part at
most MAX_CAPTION_WORDS), so nothing is cut after the sentence is built.

The thing is looked for where the intention shows: the caption part (sentence, or a part a colon or
semicolon sets off) and the transcript clause with a sign of it (ACTIONS, or SIGNS in the languages a
transcript may switch to), or with a word both share or one said twice; a scene-setting opener
("A small bedroom at dawn;"), speaker labels, sound tags ("(cough)"), fillers and stutters are left
out. Where the evidence shows no kind of action, the message ends with FALLBACK_ACTION.

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
from core.text import FILLERS, IMPERATIVES, STOPWORDS, WORD_RE, clean_phrase, content_words

MAX_WORDS = 25  # the whole spoken sentence
# A caption is the captioner's own description; a transcript is anyone's words, so it gets fewer.
MAX_CAPTION_WORDS = 12
MAX_SPEECH_WORDS = 6
MAX_PLACE_WORDS = 4


def word_count(text: str) -> int:
    """Words as spoken: letter or digit runs ("You're", "birthday-candle" count once; a dash not at all)."""
    return len(re.findall(r"[^\W_][\w'’-]*", text))


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


# A caption's parts: its sentences and the parts a colon or semicolon sets off ("Kitchen counter: a tin ...").
_SEGMENT = re.compile(r"(?<=[.!?;:])\s+")
# A transcript's clauses: sentences, and the parts commas or dashes set off ("Oh no, we're out of milk").
_CLAUSE = re.compile(r"(?<=[.!?;,…])\s+|\s+[-–—]+\s+")
_LABEL = re.compile(r"\[[^\]]*\]\s*")
_SOUND = re.compile(r"\([^)]*\)|\*[^*]*\*")  # "(cough)", "*laughs*": sound tags, no words anyone said


def _sign_at(text: str) -> int | None:
    """Where the first sign of an intention (ACTIONS, else SIGNS) starts in `text`, or None."""
    return min((m.start() for pat, _ in ACTIONS if (m := pat.search(text))),
               default=(m.start() if (m := SIGNS.search(text)) else None))


def _turns(audio: str) -> list[tuple[str, str]]:
    """(speaker, words) of each turn, sound tags dropped; speaker "" where none is labelled."""
    text = _SOUND.sub(" ", audio or "")
    # hesitations and the commas around them ("need the, uh, the sick note") would split a clause
    text = re.sub(r"[,…]?\s*\b(?:%s)\b[,.…]*" % "|".join(map(re.escape, sorted(FILLERS, key=len, reverse=True))),
                  " ", text, flags=re.I)
    out, speaker, last = [], "", 0
    for m in _LABEL.finditer(text):
        if text[last:m.start()].strip():
            out.append((speaker, text[last:m.start()].strip()))
        speaker, last = m.group(0).strip("[] \t").lower(), m.end()
    if text[last:].strip():
        out.append((speaker, text[last:].strip()))
    return out


def _salient(caption: str, audio: str, apart: bool = False):
    """Words that point at the thing: content words the caption and the transcript share ("vest" seen
    and said), and words said more than once ("maíz ... el maíz blanco"), which are rarely fillers."""
    seen = set(content_words(caption))
    # said twice on purpose, not stuttered ("luego, luego"); a sign ("split") is no name of the thing
    said = [w for w in content_words(_unstutter(" ".join(t for _, t in _turns(audio)))) if _sign_at(w) is None]
    shared = {w for w in said if w in seen or (len(w) > 4 and any(_stem(w) == _stem(v) for v in seen))}
    again = {w for w in said if len(w) > 3 and said.count(w) > 1}
    return (shared, again) if apart else shared | again


def _stem(w: str) -> str:
    return w[:-1] if w.endswith("s") else w


def speech_phrase(audio: str, caption: str = "") -> str:
    """At most MAX_SPEECH_WORDS cleaned words of what was said: the clause that shows the intention
    (a sign of ACTIONS or SIGNS, a word the caption shares, a word said twice), from the noun run
    before its sign on, the wearer's own clause first on a tie, else the clause that says the most. Of
    a request ("please sign the card for Lena") only what follows its first imperative is kept ("the
    card for Lena"): the thing asked about, not a garbled sentence with its verb cleaned away."""
    return _speech(audio, caption)[0]


def _speech(audio: str, caption: str = "") -> tuple[str, float]:
    """speech_phrase and how much its clause shows the intention (a sign 2, each shared or repeated word 2)."""
    shared, again = _salient(caption, audio, apart=True)
    best, best_score = "", 0.0
    for speaker, turn in _turns(audio):
        clauses = _CLAUSE.split(turn)
        for n, clause in enumerate(clauses):
            words = _words(clause)
            hit = _sign_at(clause)
            shows = (2.0 if hit is not None else 0.0) + 2.0 * len(shared & set(words)) + len(again & set(words))
            # on a tie the first clause that shows it; where none does, the one that says the most
            score = shows + (0.0 if shows else 0.1 * min(len(content_words(clause)), 5)) \
                + (0.05 if speaker in ("", "user") else 0.0)
            if hit is not None:
                # From the sign on ("out of oat milk again"), so the words go to the thing, not to "Oh no, we are".
                clause = " ".join(_noun_before(clause[:hit].split())) + " " + clause[hit:]
                # a sign with little after it ("hay que llevar una, una bolsa estanca"): the next clause says what
                for more in clauses[n + 1:n + 3]:
                    if len(_words(clause[hit:])) >= 5:
                        break
                    clause += " " + more
            phrase = _phrase(_unstutter(clause))
            if phrase and score > best_score:
                best, best_score = phrase, score
    return best, (best_score // 1)


def _unstutter(text: str) -> str:
    """A transcript's repeated words said once ("una, una bolsa", "your charger- your charger cable")."""
    return re.sub(r"\b((?:[^\W\d_][\w'’]*\s*){1,2}?)[,.…-]*\s+\1\b", r"\1", text, flags=re.I)


def _noun_before(words: list[str]) -> list[str]:
    """The run of up to three content words just before a sign, across at most one stopword ("oat
    milk carton" of "the oat milk carton is empty"); [] when there is none."""
    tail = words[-1:] if words and words[-1].lower() in STOPWORDS else []
    run: list[str] = []
    for w in reversed(words[:len(words) - len(tail)]):
        # A stopword, a contraction ("we're") or a clause mark ("no,") ends the noun run; of "cable's" the
        # noun is kept ("your charger cable's all split").
        if re.search(r"['’]s$", w) and w[:-2].lower() not in STOPWORDS and len(w) > 4 and not run:
            w = w[:-2]
        if w.lower() in STOPWORDS or "'" in w or "’" in w or not w[-1].isalnum() or len(run) == 3:
            break
        run.insert(0, w)
    return run + tail if run else []


def _head(words: list[str]) -> list[str]:
    """The noun run a caption part opens with, up to four words ("white charging lead lying" of "a
    white charging lead lying on the duvet, ..."): usually what the part is about."""
    run: list[str] = []
    for w in words:
        if w.lower() in STOPWORDS or w.lower() in ("his", "her", "its", "their"):
            if run:
                break
            continue
        run.append(w)
        if not w[-1].isalnum() or len(run) == 4:
            break
    return run


def _phrase(sentence: str) -> str:
    verb = next((m for m in WORD_RE.finditer(sentence) if m.group(0).lower() in IMPERATIVES), None)
    return clean_phrase(sentence[verb.end():] if verb else sentence, MAX_SPEECH_WORDS)


def caption_phrase(visual: str, salient: set[str], room: int) -> str:
    """At most `room` cleaned words of a caption: of its parts (sentences, and the parts a colon or
    semicolon sets off) the one that shows the intention (a sign, a word the transcript shares), its
    opening noun run and its clause from the noun run before the sign on. A first part that shows
    nothing while a later one does is a scene-setting opener ("A small bedroom at dawn;") and is left
    out; where nothing shows, the caption from its start, as much as fits."""
    if room <= 0:
        return ""
    parts = [s for s in _SEGMENT.split((visual or "").strip()) if clean_phrase(s, 1)]
    if not parts:
        return ""
    scores = [_part_score(p, salient) for p in parts]
    top = max(scores)
    if top == 0:
        # nothing shows: the opener and what follows it, as much as fits ("Blue inhaler in a hand, dose counter")
        said = [c for c in (clean_phrase(p, MAX_CAPTION_WORDS) for p in parts) if c]
        out: list[str] = []
        for c in said:
            n = room - sum(word_count(x) for x in out)
            if n < 2 and out:
                break
            out.append(clean_phrase(c, n))
        return ", ".join(x for x in out if x)
    at = scores.index(top)
    part = parts[at]
    hit = _sign_at(part)
    if hit is None:
        said = clean_phrase(part, room)
    else:
        sign = clean_phrase(" ".join(_noun_before(part[:hit].split())) + " " + part[hit:], room)
        head = clean_phrase(" ".join(_head(part.split())), 4)
        if not head or set(_words(head)) <= set(_words(sign)) or word_count(head) + 2 > room:
            said = sign
        else:
            said = f"{head}, {clean_phrase(sign, room - word_count(head))}".rstrip(", ")
    # room left: the first part's own noun run too ("Vacuum cleaner" of "Vacuum cleaner open, ...")
    lead = clean_phrase(" ".join(_head(parts[0].split())), 3) if at > 0 else ""
    if lead and word_count(said) + word_count(lead) <= room and not set(_words(lead)) <= set(_words(said)):
        said = f"{lead}, {said}"
    return said


def thing_phrase(e: Event, max_words: int = MAX_CAPTION_WORDS + MAX_SPEECH_WORDS) -> str:
    """What the event is about in at most max_words words: a cleaned phrase of the caption and one of
    the speech (the keyword-bearing object is usually in one of the two). The part that shows the
    intention more (a sign, a word both share) gets its words first, the speech on a tie; a speech
    phrase that only repeats the caption is left out."""
    max_words = max(0, max_words)
    salient = _salient(e.visual or "", e.audio or "")
    speech, said_shows = _speech(e.audio or "", e.visual or "")
    speech = clean_phrase(speech, max_words)
    parts = [s for s in _SEGMENT.split((e.visual or "").strip()) if s]
    seen_shows = max((_part_score(p, salient) for p in parts), default=0)
    whole = clean_phrase(e.visual or "", MAX_CAPTION_WORDS + 1)
    if set(_words(speech)) <= set(_words(whole)):
        speech = ""
    if speech and seen_shows > said_shows:
        # the caption first; the speech gets what it leaves, when that is a few words
        caption = caption_phrase(e.visual or "", salient, min(MAX_CAPTION_WORDS, max_words - 2))
        rest = max_words - word_count(caption)
        speech = clean_phrase(speech, rest) if rest >= 2 else ""
    else:
        room = min(MAX_CAPTION_WORDS, max_words - word_count(speech))
        if e.visual and room < 3 <= max_words:  # a caption of one or two words names nothing
            speech = clean_phrase(speech, max(0, max_words - 3))
            room = max_words - word_count(speech)
        caption = caption_phrase(e.visual or "", salient, room)
    if set(_words(speech)) <= set(_words(caption)):
        speech = ""
    return "; ".join(p for p in (caption, speech) if p)


def _part_score(part: str, salient: set[str]) -> int:
    return (2 if _sign_at(part) is not None else 0) + min(2, len(salient & set(_words(part))))


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD_RE.findall(text)]


def place_phrase(e: Event) -> str:
    return clean_phrase(e.location or "", MAX_PLACE_WORDS)


# What might be done, from the kind of intention the evidence shows; the first that matches is said.
ACTIONS: list[tuple[re.Pattern, str]] = [(re.compile(p, re.I), a) for p, a in [
    (r"\b(pick ?up|collect|parcel|package|ready for collection|dry.?clean)", "maybe pick it up or collect it"),
    (r"\b(broken|broke|split|torn|tear|flat|puncture|leak|zip|crack|pops\b|popped|snapped|worn|ripped|cracked)", "maybe repair it or buy new"),
    (r"\b(ran out|run out|out of|empty|last one|last ones|used up|finished|no more|expired|missing|lost)", "maybe buy or get a new one"),
    (r"\b(lend|borrow|bring|give (it|them) back|return|forgot)", "remember to bring or return it"),
    (r"\b(hurts?|pain|ache|sore|doctor|dentist|appointment|physio|clinic)", "maybe book an appointment"),
    (r"\b(birthday|call (him|her|them|back)|text|message|anniversary)", "maybe call or message them"),
    (r"\b(deadline|due|submit|send|form|receipt|timesheet|expense|renew|pay|bill)", "maybe get it done and sent"),
    (r"\b(need|needs|should|have to|must|don't forget|remember)", "maybe take care of it now"),
]]
# Signs of an intention in the languages a transcript may switch to (broken, finished, needed); they
# only find the thing: what might be done comes of ACTIONS' signs, else FALLBACK_ACTION.
SIGNS = re.compile(r"\b(se acab|acab[oóa]|no hay|no queda|falta|necesit|hay que|tiene que|tengo que|rot[oa]s?\b|quemad|muert[oa]s?\b|"
                   r"quebr|rasgad|precis[ao]|tem que|não tem|cass[ée]|plus de|faut\b|besoin|déchir|kaputt|"
                   r"brauch|muss\b|gerissen|dead\b|burnt out|bent\b)", re.I)
FALLBACK_ACTION = "maybe get it sorted"  # what a person says when the evidence shows no kind of action
ACTION_PHRASES = list(dict.fromkeys([a for _, a in ACTIONS] + [FALLBACK_ACTION]))  # what the thing reader picks from
READ_WORDS = 6  # of the thing, at most this many words the thing reader marked
READ_ENOUGH = 3  # with fewer marked words than this, the composer's own phrase adds what it finds
NOW_WORDS = 8  # "Right now: ..." when the current moment has no place, so the past thing keeps its words


def action_phrase(evidence: Sequence[Event], default: str = FALLBACK_ACTION) -> str:
    text = " ".join(f"{e.visual or ''} {e.audio or ''}" for e in evidence)
    return next((a for pat, a in ACTIONS if pat.search(text)), default)


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


def compose_message(evidence: Sequence[Event], current: Event, reader=None) -> Composed:
    """One sentence from the first evidence event (the one the decision rests on most), e.g.
    "You're at Grand Ave - empty birthday-candle box, yesterday evening; maybe buy or get a new one."
    reader: a trained reasoner.gate.thing_reader.ThingReader; it names the thing and picks the action."""
    if not evidence:
        return compose_now(current)
    e = evidence[0]
    now = now_phrase(current)
    when = when_phrase(e.dt, current.dt)
    reading = reader.read(e) if reader is not None else None
    action = (reading.action if reading is not None else None) or action_phrase([e])
    # the dash counts too, so the sentence is short by any count (len(message.split()) included)
    room = MAX_WORDS - 1 - word_count(f"{now} {when} {action}")
    thing = read_phrase(reading, min(room, READ_WORDS)) if reading is not None else ""
    rest = room - word_count(thing)
    # the rules' phrase only where the reader marked little: beside a full mark it mostly repeats it
    own = thing_phrase(e, rest) if word_count(thing) < READ_ENOUGH and (rest >= 3 or not thing) else ""
    if own and not set(_words(own)) <= set(_words(thing)):
        thing = f"{thing}; {own}" if thing else own
    msg = f"{now} - {thing}, {when}" if thing else f"{now} - something came up {when}"
    return Composed(f"{msg}; {action}.", [e.id])


def read_phrase(reading, room: int) -> str:
    """The runs the thing reader marked, the surest first while they fit, said in text order and
    cleaned like every phrase taken from a recording; a run whose words another one already says
    ("rear light" beside "rear bike light") is left out."""
    chosen: list[tuple[int, str]] = []
    for run in sorted(reading.runs, key=lambda r: -r.score):
        used = sum(word_count(c) for _, c in chosen)
        if used >= room:
            break
        said = clean_phrase(reading.text[run.start:run.end], room - used)
        if not said or any(set(_words(said)) <= set(_words(c)) for _, c in chosen):
            continue
        chosen = [(at, c) for at, c in chosen if not set(_words(c)) <= set(_words(said))] + [(run.start, said)]
    return ", ".join(c for _, c in sorted(chosen))


def compose_now(current: Event) -> Composed:
    """The now head's sentence: the moment alone calls for help (it is its own evidence)."""
    action = action_phrase([current], "maybe I can help with this now")
    return Composed(f"{now_phrase(current, MAX_WORDS - 1 - word_count(action))} - {action}.", [current.id])
