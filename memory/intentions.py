"""Delayed intentions as typed records with a lifecycle: open -> raised -> resolved | expired | dismissed.

Construction stores an intention (memory/store.py, with an "open" transition); a state-change link
resolves it in the same write. After each decision the loop and the service call
IntentionBook.after_decision, which writes in one transaction: a "no thanks" from the user right
after an assist dismisses what that assist raised, an assist resting on the intention's event
raises it, and an intention older than the horizon expires. Every transition row is keyed by
(intention, state, causing event), and a transition happens only from open or raised, so running
the same step again (a rerun after a crash) writes nothing twice.

Recorded text is untrusted: a record shows only a gist of a few cleaned words (core.text.clean_phrase).
"""
from __future__ import annotations

import hashlib
import re
import time
from datetime import datetime, timezone
from typing import Literal, Optional, Sequence

from pydantic import BaseModel

from core.formats import Event
from core.text import WORD_RE, clean_phrase, content_words, user_speech
from memory.timecues import WEEKDAYS

Status = Literal["open", "raised", "resolved", "expired", "dismissed"]
STATES = ("open", "raised", "resolved", "expired", "dismissed")
LIVE = ("open", "raised")  # every transition starts from one of these; the other three are final
GIST_WORDS = 6

# Words that say an intention exists but not what it is about ("I need to ...", "The user notices ...").
_FRAME = frozenset("""
need needs needed want wants have has must should gotta going remember forget forgot don't dont
ran run out pick get got grab take notice notices noticed look looks looking see sees saw
hold holds holding say says said
tell tells mention mentions walk walks walking think thinks realize realizes later tomorrow tonight
""".split())
# Place kinds a trigger may name; matched against a brief's location words.
PLACE_WORDS = frozenset("""
store shop supermarket grocery market pharmacy chemist bakery butcher mall station office work
gym bank post library school clinic hospital doctor dentist home kitchen garage cafe restaurant
bar park airport hardware petrol gas cleaner cleaners laundry salon barber
""".split())
_INTENT_RE = re.compile(r"\b(need|have to|must|should|remember|don't forget|ran out|run out|out of|"
                        r"buy|get|pick up|call|book|bring|return|fix|renew|pay|send)\b", re.I)
# A user declining an assist ("[user] No thanks", "not now", "I already did").
DECLINE_RE = re.compile(r"\b(no,? thanks?|no,? thank you|not now|i already did|i've already|i have already|"
                        r"already (done|did|bought|got|called|booked|paid|sent|have)|"
                        r"don't remind me|stop reminding me)\b", re.I)
# Capitalised words after "for"/"to"/"with" that are not names ("for Friday", "to Tesco's store").
TIME_WORDS = frozenset(WEEKDAYS) | frozenset("""january february march april may june july august september
october november december today tomorrow tonight morning afternoon evening night weekend week christmas easter""".split())
NOT_NAMES = PLACE_WORDS | TIME_WORDS
_NAME_RE = re.compile(r"\b(?:for|to|with)\s+([A-Z][a-z]{1,20})\b|\b([A-Z][a-z]{1,20})'s\b")


class Trigger(BaseModel):
    """When an intention is worth raising: cue words of the situation, and a time window when one was said."""

    places: list[str] = []  # kinds of place named with it ("pharmacy", "store")
    people: list[str] = []  # names it involves
    objects: list[str] = []  # content words of its gist ("oat", "milk")
    window_start: Optional[str] = None  # ISO time, UTC: the earliest time window said with it
    window_end: Optional[str] = None
    window_text: Optional[str] = None  # the phrase it was resolved from, cleaned ("Friday evening")


class Transition(BaseModel):
    state: Status
    at: str  # ISO time, UTC: the causing event's time (an API dismissal: when it was received)
    event_id: Optional[str] = None  # the event that caused it; None for an API dismissal
    source: Literal["event", "api"] = "event"


class IntentionRecord(BaseModel):
    """A delayed intention (docs/formats.md section 7)."""

    id: str
    user_id: str
    gist: str  # a few cleaned words: what it is about
    evidence: list[str]  # event ids: where it formed, then later events linked to it
    formed_at: str  # ISO time, UTC
    trigger: Trigger
    for_whom: str  # "user" (the wearer) or a name it is for
    status: Status
    score: float  # the constructor's confidence that an intention formed
    transitions: list[Transition] = []


class Derived(BaseModel):
    """What the store keeps beside an intention's text, derived once when it is stored."""

    id: str
    gist: str
    trigger: Trigger
    for_whom: str
    window_start: Optional[float] = None
    window_end: Optional[float] = None


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat()


def intention_id(user: str, event_id: str, text: str) -> str:
    """Stable across reruns and store upgrades: the user, the formation event and the intention's text."""
    return "int-" + hashlib.sha256(f"{user}\0{event_id}\0{text}".encode()).hexdigest()[:12]


def _gist(event: Event, text: str) -> str:
    source = text
    if text == event.text():  # a constructor that keeps the event itself: pick its intention sentence
        speech = user_speech(event.audio or "")
        said = [s for s in re.split(r"(?<=[.!?;])\s+", speech) if _INTENT_RE.search(s)]
        source = said[0] if said else re.split(r"(?<=[.!?;])\s+", (event.visual or speech).strip())[0]
    # the time lives in the trigger's window; the gist says what
    words = [w for w in content_words(source)
             if w not in _FRAME and w not in TIME_WORDS and "'" not in w and "’" not in w]
    return clean_phrase(" ".join(words), GIST_WORDS) or clean_phrase(source, GIST_WORDS)


def derive(user: str, event: Event, text: str, windows: Sequence[tuple[float, float, str]]) -> Derived:
    """The record's fields for `user` from the formation event, the intention's text and the event's time
    cues (start, end, phrase), as construction stored them."""
    gist = _gist(event, text)
    # what was seen and said, not where it was said: the kitchen is rarely where the milk is bought
    said = f"{event.visual or ''} {event.audio or ''} {'' if text == event.text() else text}"
    places = [w for w in content_words(said) if w in PLACE_WORDS]
    names = [a or b for a, b in _NAME_RE.findall(user_speech(event.audio or "") + " " + (event.visual or ""))]
    people = [n for n in (clean_phrase(n, 1) for n in names) if n and n.lower() not in NOT_NAMES]
    win = min(windows, default=None)
    trigger = Trigger(places=list(dict.fromkeys(places)), people=list(dict.fromkeys(people)),
                      objects=list(dict.fromkeys(w.lower() for w in WORD_RE.findall(gist) if len(w) > 2)),
                      window_start=iso(win[0]) if win else None, window_end=iso(win[1]) if win else None,
                      window_text=clean_phrase(win[2], 6) if win else None)
    return Derived(id=intention_id(user, event.id, text), gist=gist, trigger=trigger,
                   for_whom=people[0] if people else "user",
                   window_start=win[0] if win else None, window_end=win[1] if win else None)


def declines(event: Event) -> bool:
    """The wearer says no to what was just suggested ("no thanks", "not now", "I already did")."""
    return bool(event.audio) and DECLINE_RE.search(user_speech(event.audio)) is not None


class Change(BaseModel):
    """One transition to write; applied only while the intention is open or raised."""

    intention_id: str
    state: Status
    event_id: str = ""  # "" for an API dismissal
    ts: float
    source: Literal["event", "api"] = "event"


def expire_hours(cfg) -> float:
    h = cfg.memory.intentions.expire_hours
    return cfg.reasoner.intention_ttl_hours if h is None else h


class IntentionBook:
    """One user's intention records in a store (memory/store.py)."""

    def __init__(self, store, user: str, expire_h: float = 168.0, decline_window_min: float = 10.0):
        self.store, self.user = store, user
        self.expire_s = expire_h * 3600
        self.decline_s = decline_window_min * 60

    @classmethod
    def for_config(cls, store, user: str, cfg) -> "IntentionBook":
        return cls(store, user, expire_hours(cfg), cfg.memory.intentions.decline_window_minutes)

    def records(self, status: Optional[str] = None) -> list[IntentionRecord]:
        return self.store.intention_records(self.user, status)

    def get(self, intention_id: str) -> Optional[IntentionRecord]:
        return next(iter(self.store.intention_records(self.user, None, intention_id)), None)

    def after_decision(self, event: Event, decision: dict) -> int:
        """The transitions a decided event causes, written in one transaction; returns how many were new.
        decision: the decision row (docs/formats.md section 4) as it was logged."""
        ts = event.dt.timestamp()
        changes: list[Change] = []
        if declines(event):
            raised_at = self.store.last_raise(self.user, ts - self.decline_s, ts, exclude_event=event.id)
            if raised_at is not None:
                changes += [Change(intention_id=i, state="dismissed", event_id=event.id, ts=ts)
                            for i in self.store.raised_by(self.user, raised_at)]
        if decision.get("assist") and decision.get("evidence"):
            changes += [Change(intention_id=i, state="raised", event_id=event.id, ts=ts)
                        for i in self.store.live_intentions_at(self.user, decision["evidence"])]
        changes += [Change(intention_id=i, state="expired", event_id=event.id, ts=formed + self.expire_s)
                    for i, formed in self.store.live_formed_before(self.user, ts - self.expire_s)]
        return self.store.transition(self.user, changes)

    def closed_at(self, event_ids: Sequence[str]) -> dict[str, str]:
        """Event id -> why raising it is out of the question: every intention formed at that event is
        dismissed, expired or resolved (an event with a live intention, or none, is not listed)."""
        by_event: dict[str, list] = {}
        for row in self.store.intention_states_at(self.user, event_ids):
            by_event.setdefault(row.event_id, []).append(row)
        return {e: "; ".join(f"intention {r.intention_id} from {e} is {r.status} (its record)" for r in rows)
                for e, rows in by_event.items() if all(r.status not in LIVE for r in rows)}

    def dismiss(self, intention_id: str, at: Optional[float] = None) -> Optional[IntentionRecord]:
        """A user's "no thanks" through the API; None when this user has no such intention."""
        if self.get(intention_id) is None:
            return None
        self.store.transition(self.user, [Change(intention_id=intention_id, state="dismissed",
                                                 ts=time.time() if at is None else at, source="api")])
        return self.get(intention_id)
