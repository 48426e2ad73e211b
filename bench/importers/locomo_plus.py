"""LoCoMo-Plus cue/trigger pairs -> positive CPMBench timelines, for retrieval metrics (DIR@k).

Pair i is stitched into LoCoMo conversation i mod 10 (as the paper does): the conversation becomes
events of TURNS_PER_EVENT turns (audio "[Speaker] text ...", session times kept), the trigger is a
new last event one day after the last session, and the cue dialogue is an event `time_gap` before it;
the cue is the intention's formation. The wearer is the conversation's speaker_a, who says both the
cue's "A:" lines and the trigger; "B:" lines are speaker_b's.

LoCoMo's session times ("1:56 pm on 8 May, 2023") carry no zone: they are read as UTC (+00:00).
relation_type -> category (LoCoMo-Plus has no scenario categories; the closest of the 8):
causal -> daily_life, state -> health, goal -> work, value -> social.
Keywords are one group of a few content words of the cue: enough for the offline judge, but these
instances are meant for DIR@k, not for response judging.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from bench.importers import ImportError_, ImportResult, load_json, require
from core.formats import Event, Instance, Intention
from core.timeutil import format_time

TURNS_PER_EVENT = 4
TURN_SECONDS = 30
TRIGGER_AFTER_LAST_SESSION = timedelta(days=1)
CATEGORY_MAP = {"causal": "daily_life", "state": "health", "goal": "work", "value": "social"}

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3, "several": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_GAP = re.compile(r"\b(\d+|" + "|".join(_NUMBERS) + r")\s+(?:of\s+)?(day|week|month|year)s?\b", re.IGNORECASE)
_STOP = set("""about after again also always and been before being both could does doing during each even every
from have having here into just like made make more most much myself only other over really same since some
such than that their them then there these they thing things this those through very want were what when where
which while will with would your yours actually because finally started still""".split())


def parse_gap(text: str) -> timedelta:
    """'two months later', 'a couple of months later', 'about one week later' -> a timedelta."""
    m = _GAP.search(text.replace("a couple of", "couple").replace("a few", "few"))
    if not m:
        raise ValueError(f"time_gap {text!r}: no '<number> <day|week|month|year>' in it")
    n = m.group(1).lower()
    count = int(n) if n.isdigit() else _NUMBERS[n]
    return timedelta(days=count * _UNIT_DAYS[m.group(2).lower()])


def parse_locomo_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    try:
        dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        raise ValueError(f"session time {text!r} is not like '1:56 pm on 8 May, 2023'") from None
    return dt.replace(tzinfo=timezone.utc)


def dialogue_lines(text: str) -> list[tuple[str, str]]:
    """'A: ...\\nB: ...' -> [('A', '...'), ('B', '...')]; lines without a label belong to A."""
    out = []
    for line in re.split(r"\n|\\n", text):
        line = line.strip()
        if not line:
            continue
        m = re.match(r"^([AB])\s*:\s*(.*)$", line)
        out.append((m.group(1), m.group(2).strip()) if m else ("A", line))
    return out


def content_words(text: str, n: int = 4) -> list[str]:
    words = []
    for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text):
        lw = w.lower().strip("'-")
        if lw not in _STOP and lw not in words and "'" not in lw:
            words.append(lw)
    return sorted(words, key=len, reverse=True)[:n]


def conversation_events(conv: dict) -> list[tuple[datetime, Event]]:
    """A LoCoMo conversation as (time, event) pairs, ids left for the caller to assign."""
    a, b = conv.get("speaker_a"), conv.get("speaker_b")
    sessions = sorted((int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k))
    out = []
    for _, key in sessions:
        turns = conv[key]
        if not turns:
            continue
        start = parse_locomo_time(conv[f"{key}_date_time"])
        for j in range(0, len(turns), TURNS_PER_EVENT):
            chunk = turns[j:j + TURNS_PER_EVENT]
            audio = " ".join(f"[{t['speaker']}] {t['text']}" for t in chunk)
            visual = f"A conversation with {b if a else 'a friend'}."
            photos = [f"{t['speaker']} shows a photo: {t['blip_caption']}." for t in chunk if t.get("blip_caption")]
            if photos:
                visual += " " + " ".join(photos)
            t = start + timedelta(seconds=j * TURN_SECONDS)
            out.append((t, Event(id="", time=format_time(t), location=None, visual=visual, audio=audio)))
    return out


def convert(i: int, pair: dict, sample: dict) -> Instance:
    for key in ("cue_dialogue", "trigger_query", "time_gap", "relation_type"):
        if key not in pair:
            raise ValueError(f"missing key {key!r}")
    conv = sample["conversation"]
    a, b = conv["speaker_a"], conv["speaker_b"]
    names = {"A": a, "B": b}
    category = CATEGORY_MAP.get(pair["relation_type"])
    if category is None:
        raise ValueError(f"unknown relation_type {pair['relation_type']!r} (known: {', '.join(CATEGORY_MAP)})")
    gap = parse_gap(pair["time_gap"])
    timed = conversation_events(conv)
    if not timed:
        raise ValueError(f"conversation {sample.get('sample_id')!r} has no turns")
    trigger_time = max(t for t, _ in timed) + TRIGGER_AFTER_LAST_SESSION
    cue = dialogue_lines(pair["cue_dialogue"])
    trig = dialogue_lines(pair["trigger_query"])
    if not cue or not trig:
        raise ValueError("empty cue_dialogue or trigger_query")
    cue_event = Event(id="", time=format_time(trigger_time - gap), visual=f"A conversation with {b}.",
                      audio=" ".join(f"[{names[s]}] {t}" for s, t in cue))
    trigger_event = Event(id="", time=format_time(trigger_time), visual=f"A conversation with {b}.",
                          audio=" ".join(f"[{names[s]}] {t}" for s, t in trig))
    # the cue joins the conversation at its time; a tie goes after the conversation's event
    timed.append((trigger_time - gap + timedelta(microseconds=1), cue_event))
    timed.sort(key=lambda p: p[0])
    events = [e for _, e in timed] + [trigger_event]
    width = len(str(len(events)))
    for n, e in enumerate(events, start=1):
        e.id = f"e{n:0{width}d}"
    cue_text = next((t for s, t in cue if s == "A"), cue[0][1])
    words = content_words(cue_text) or content_words(pair["cue_dialogue"]) or [cue_text.split()[0]]
    intention = Intention(id="i1", formation=cue_event.id, state_change=None, reference=cue_text, keywords=[words])
    return Instance(id=f"locomo-plus-{i:04d}-positive", category=category, variant="positive",
                    persona=f"{a}, who talks regularly with {b}.", events=events, decision_event=trigger_event.id,
                    intentions=[intention],
                    source={"dataset": "LoCoMo-Plus", "pair": i, "conversation": sample.get("sample_id"),
                            "relation_type": pair["relation_type"], "time_gap": pair["time_gap"]})


def iter_load(src: str | Path | None = None) -> Iterator[Instance | str]:
    """Instances one at a time (a whole conversation per pair adds up), or a message per skipped pair."""
    src = require(["locomo_plus.json", "locomo10.json"], src)
    pairs = load_json(src / "locomo_plus.json")
    convs = load_json(src / "locomo10.json")
    if not isinstance(pairs, list) or not isinstance(convs, list) or not convs:
        raise ImportError_(f"{src}: locomo_plus.json and locomo10.json must both be JSON lists")
    for i, pair in enumerate(pairs):
        sample = convs[i % len(convs)]
        try:
            if not isinstance(pair, dict):
                raise ValueError(f"expected an object, got {type(pair).__name__}")
            yield convert(i, pair, sample)
        except (ValueError, KeyError, TypeError) as exc:
            msg = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            yield f"{src / 'locomo_plus.json'}: pair {i}: {msg}"


def load(src: str | Path | None = None) -> ImportResult:
    out = ImportResult()
    for item in iter_load(src):
        if isinstance(item, str):
            out.skipped.append(item)
        else:
            out.instances.append(item)
    return out
