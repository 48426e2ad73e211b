"""Time cues: resolve relative time expressions ("Friday evening", "tomorrow at 9") to absolute windows.

Windows are computed in the event's own UTC offset, because "Friday evening" means the
wearer's Friday, not UTC's. A window is half-open [start, end).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PARTS = {  # hours [start, end) of a part of the day
    "morning": (6, 12), "afternoon": (12, 17), "evening": (17, 22), "night": (18, 24),
    "noon": (11, 14), "lunch": (11, 14), "lunchtime": (11, 14),
}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
           "a couple of": 2, "few": 3, "a few": 3}

_DAY = r"today|tonight|tomorrow|day after tomorrow|weekend|week|" + "|".join(WEEKDAYS)
_PART = "|".join(PARTS)
_CLOCK = r"(?:at|by|around|before)\s+(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?"
DAY_RE = re.compile(
    rf"\b(?:(this|next|on|coming|the)\s+)?(?:(this|next)\s+)?({_DAY})(?:\s+({_PART}))?(?:,?\s+{_CLOCK})?\b",
    re.I)
THIS_PART_RE = re.compile(rf"\bthis\s+({_PART})\b", re.I)
IN_RE = re.compile(r"\bin\s+(\d+|a couple of|a few|couple of|few|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(minutes?|hours?|days?|weeks?)\b", re.I)
log = logging.getLogger(__name__)
LATER_RE = re.compile(r"\blater\s+(?:today|on)\b|\bthis\s+(?:afternoon|evening)\b", re.I)


MAX_WINDOW = timedelta(days=8)  # wider windows cue nothing specific; the bound also keeps the store query ranged


@dataclass(frozen=True)
class TimeWindow:
    expression: str
    start: datetime
    end: datetime

    def contains(self, t: datetime) -> bool:
        return self.start <= t < self.end


def _day_start(d: datetime) -> datetime:
    return datetime.combine(d.date(), time(0), tzinfo=d.tzinfo)


def _clock(hour: str, minute: str | None, ampm: str | None) -> tuple[int, int] | None:
    h, m = int(hour), int(minute or 0)
    if ampm:
        pm = ampm.lower().startswith("p")
        h = h % 12 + (12 if pm else 0)
    elif h < 7:  # "at 5" said in daytime means 5 pm
        h += 12
    if not (0 <= h < 24 and 0 <= m < 60):
        return None
    return h, m


def _day_window(word: str, mods: tuple[str | None, ...], now: datetime) -> tuple[datetime, datetime] | None:
    today = _day_start(now)
    word = word.lower()
    if word in ("today", "tonight"):
        return today, today + timedelta(days=1)
    if word == "tomorrow":
        return today + timedelta(days=1), today + timedelta(days=2)
    if word == "day after tomorrow":
        return today + timedelta(days=2), today + timedelta(days=3)
    nxt = "next" in mods
    if word == "week":
        if not nxt:
            return None  # "this week" / "a week" are too vague to cue anything
        monday = today - timedelta(days=now.weekday()) + timedelta(days=7)
        return monday, monday + timedelta(days=7)
    if word == "weekend":
        saturday = today + timedelta(days=(5 - now.weekday()) % 7)
        if now.weekday() == 6:  # on Sunday, "the weekend" is today
            saturday = today - timedelta(days=1)
        if nxt and now.weekday() in (5, 6):
            saturday += timedelta(days=7)
        return saturday, saturday + timedelta(days=2)
    target = WEEKDAYS.index(word)
    ahead = (target - now.weekday()) % 7
    if ahead == 0 and "this" not in mods:
        ahead = 7  # "Friday" said on a Friday means the next one, unless "this Friday"
    day = today + timedelta(days=ahead)
    return day, day + timedelta(days=1)


def resolve(text: str, now: datetime) -> list[TimeWindow]:
    """All time expressions in `text`, resolved against `now` (the event's time, with offset).

    A phrase whose window falls outside the calendar ("in 500000 weeks", "tomorrow" on 31 Dec
    9999) gives no window and is logged: one odd phrase must never cost the event its memory.
    """
    if now.tzinfo is None:
        raise ValueError("resolve() needs an aware datetime (the event time has an offset)")
    out: list[TimeWindow] = []
    taken: list[tuple[int, int]] = []
    for m in DAY_RE.finditer(text):
        if (win := _guarded(_day_match, m, now)) is not None:
            out.append(win)
            taken.append(m.span())
    for m in THIS_PART_RE.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        if (win := _guarded(_part_match, m, now)) is not None:
            out.append(win)
    for m in IN_RE.finditer(text):
        if (win := _guarded(_in_match, m, now)) is not None:
            out.append(win)
    return [w for w in out if w.end - w.start <= MAX_WINDOW]


def _guarded(fn, m: re.Match, now: datetime) -> TimeWindow | None:
    try:
        return fn(m, now)
    except (OverflowError, ValueError) as exc:  # date arithmetic past year 9999, or an absurd number
        log.warning("time phrase %r at %s is outside the calendar (%s); no time cue", m.group(0)[:80],
                 now.isoformat(), exc)
        return None


def _day_match(m: re.Match, now: datetime) -> TimeWindow | None:
    mods = tuple((g or "").lower() for g in (m.group(1), m.group(2)))
    if m.group(3).lower() == "week" and "next" not in mods:
        return None
    win = _day_window(m.group(3), mods, now)
    if win is None:
        return None
    start, end = win
    if m.group(3).lower() == "today" and not (m.group(4) or m.group(5)):
        return None  # a bare "today" names the moment it is said in: nothing to wait for
    part = (m.group(4) or ("night" if m.group(3).lower() == "tonight" else "")).lower()
    if part:
        h0, h1 = PARTS[part]
        start, end = start + timedelta(hours=h0), start + timedelta(hours=h1)
    if m.group(5):
        hm = _clock(m.group(5), m.group(6), m.group(7))
        if hm:
            at = _day_start(start) + timedelta(hours=hm[0], minutes=hm[1])
            # the useful moment to remember is the run-up to the appointment
            start, end = at - timedelta(hours=2), at + timedelta(minutes=30)
    if end <= now:
        return None
    return TimeWindow(m.group(0).strip(), max(start, now), end)


def _part_match(m: re.Match, now: datetime) -> TimeWindow | None:
    h0, h1 = PARTS[m.group(1).lower()]
    start = _day_start(now) + timedelta(hours=h0)
    end = _day_start(now) + timedelta(hours=h1)
    return TimeWindow(m.group(0), max(start, now), end) if end > now else None


def _in_match(m: re.Match, now: datetime) -> TimeWindow:
    raw = m.group(1).lower()
    n = int(raw) if raw.isdigit() else NUMBERS.get(raw, 1)
    unit = m.group(2).lower().rstrip("s")
    delta = {"minute": timedelta(minutes=n), "hour": timedelta(hours=n),
             "day": timedelta(days=n), "week": timedelta(weeks=n)}[unit]
    at = now + delta
    slack = max(delta / 4, timedelta(minutes=15))
    return TimeWindow(m.group(0), at - slack, at + slack)
