"""Session-start brief: what is pending and relevant now, before the user says anything.

Candidates are the user's open and raised intentions formed before `at` and not past the expiry
horizon. Each is scored (all three terms in [0, 1]):

    score = 3 * near + 1.5 * match + recent
    near   = 1 when `at` lies in its time window, falling linearly to 0 at near_hours before the
             window opens or after it closes; 0 without a window
    match  = share of the location's content words found among its trigger words (places, people,
             objects); 0 without a location
    recent = 0.5 ** (age in hours / 24): it halves every day since it formed

so an intention whose window holds `at` (3 or more) always ranks above one that only matches the
place and formed just now (at most 2.5). Ties go to the newer one. Lines are taken in rank order
while their tokens fit the budget; the first that does not fit and all after it are left out
(`omitted`). Tokens are counted as prefetch and the reasoner count them (core/tokens.py: Qwen's
tokenizer when installed), so one budget means the same everywhere.
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional, Sequence

from pydantic import BaseModel

from core.text import content_words
from core.tokens import count_tokens
from core.timeutil import parse_time
from memory.intentions import LIVE, IntentionRecord

W_NEAR, W_MATCH = 3.0, 1.5


class BriefItem(BaseModel):
    id: str
    gist: str
    status: str
    score: float
    near: float
    match: float
    recent: float
    formed_at: str
    window_start: Optional[str] = None
    window_end: Optional[str] = None
    line: str  # what the text brief shows
    tokens: int  # its tokens


class Brief(BaseModel):
    user_id: str
    at: str
    location: Optional[str] = None
    budget: int
    tokens: int  # tokens of the lines kept
    items: list[BriefItem]
    omitted: int  # relevant intentions left out by the budget
    computed_at: Optional[str] = None  # set on a brief precomputed by reflection: when it was computed


def _near(rec: IntentionRecord, at: datetime, near_hours: float) -> float:
    t = rec.trigger
    if not t.window_start or not t.window_end:
        return 0.0
    start, end = parse_time(t.window_start), parse_time(t.window_end)
    if start <= at < end:
        return 1.0
    gap_h = ((start - at) if at < start else (at - end)).total_seconds() / 3600
    return max(0.0, 1.0 - gap_h / near_hours)


def _match(rec: IntentionRecord, location: Optional[str]) -> float:
    words = set(content_words(location or ""))
    if not words:
        return 0.0
    t = rec.trigger
    cues = {w.lower() for w in (*t.places, *t.people, *t.objects)}
    return len(words & cues) / len(words)


def _line(rec: IntentionRecord) -> str:
    parts = [rec.gist or "(an intention)"]
    if rec.for_whom != "user":
        parts.append(f"for {rec.for_whom}")
    if rec.trigger.window_text:
        parts.append(f"due {rec.trigger.window_text}")
    if rec.trigger.places:
        parts.append(f"at {', '.join(rec.trigger.places[:2])}")
    if rec.status == "raised":
        parts.append("reminded before")
    return "- " + "; ".join(parts)


def build_brief(user: str, records: Sequence[IntentionRecord], at: datetime, location: Optional[str],
                budget: int, near_hours: float = 12.0, expire_hours: float = 168.0) -> Brief:
    """The ranked brief at `at` (an aware datetime) within `budget` tokens."""
    scored = []
    for rec in records:
        formed = parse_time(rec.formed_at)
        age_h = (at - formed).total_seconds() / 3600
        if rec.status not in LIVE or rec.user_id != user or age_h < 0 or age_h > expire_hours:
            continue
        near, match, recent = _near(rec, at, near_hours), _match(rec, location), 0.5 ** (age_h / 24)
        line = _line(rec)
        scored.append(BriefItem(id=rec.id, gist=rec.gist, status=rec.status,
                                score=round(W_NEAR * near + W_MATCH * match + recent, 4),
                                near=round(near, 4), match=round(match, 4), recent=round(recent, 4),
                                formed_at=rec.formed_at, window_start=rec.trigger.window_start,
                                window_end=rec.trigger.window_end, line=line, tokens=count_tokens(line)))
    scored.sort(key=lambda i: (-i.score, -parse_time(i.formed_at).timestamp(), i.id))
    kept, used = [], 0
    for item in scored:
        if used + item.tokens > budget:
            break
        kept.append(item)
        used += item.tokens
    return Brief(user_id=user, at=at.isoformat(), location=location, budget=budget, tokens=used, items=kept,
                 omitted=len(scored) - len(kept))


def render(brief: Brief) -> str:
    if not brief.items:
        if brief.omitted:
            return f"(nothing fits in {brief.budget} tokens; {brief.omitted} pending)"
        return "(nothing pending)"
    lines = [i.line for i in brief.items]
    if brief.omitted:
        lines.append(f"(+{brief.omitted} more beyond the {brief.budget}-token budget)")
    return "\n".join(lines)


def brief_from_store(store, user: str, cfg, at: datetime, location: Optional[str] = None,
                     budget: Optional[int] = None, use_cache: bool = True) -> Brief:
    """The brief of `user` in a memory store (memory/store.py), with the config's horizon and defaults.
    The one precomputed by reflection is returned instead when it still holds: no location asked,
    the same budget, `at` from its moment to memory.reflect.brief_cache_hours later, and the
    intentions unchanged since it was computed."""
    from memory.intentions import expire_hours

    c = cfg.memory.intentions
    budget = budget or c.brief_tokens
    cached = store.get_brief(user) if use_cache and location is None else None
    if (cached is not None and cached.budget == budget
            and 0 <= at.timestamp() - cached.at <= cfg.memory.reflect.brief_cache_hours * 3600
            and cached.state == store.intention_state(user)):
        return Brief.model_validate_json(cached.json)
    return build_brief(user, store.intention_records(user), at, location, budget,
                       c.brief_near_hours, expire_hours(cfg))
