"""What a chat agent hands Memory.add, as events: a text, chat turns, event objects (or a list of them).

A turn becomes an event whose audio is the turn's words after its speaker ("[user] ...",
"[assistant] ..."); system turns are instructions to the agent, not memories, and are left out.
An event without an id gets one derived from its content and time, so adding the same thing at
the same time twice names one event (and stores it once).
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from typing import Any, Optional, Union

from core.formats import Event, parse_record
from core.timeutil import format_time, parse_time

ROLES = ("user", "assistant")
SKIPPED_ROLES = ("system",)
Addable = Union[str, Event, dict, list]


def _start_time(time: Union[str, datetime, None]) -> datetime:
    if time is None:
        return datetime.now(timezone.utc).replace(microsecond=0)
    if isinstance(time, datetime):
        if time.tzinfo is None:
            raise ValueError(f"time {time.isoformat()!r} has no UTC offset; give an aware datetime")
        return time
    return parse_time(time)  # raises naming the value when it has no offset


def event_id(content: dict[str, Any]) -> str:
    """A stable id for an event's content (its time included): 'm-' and 20 hex digits of SHA-256."""
    blob = json.dumps({k: v for k, v in content.items() if k not in ("id", "user_id")}, sort_keys=True,
                      ensure_ascii=False, default=str)
    return "m-" + hashlib.sha256(blob.encode()).hexdigest()[:20]


def _metadata(metadata: Optional[dict]) -> Optional[dict]:
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise ValueError("metadata must be a dict with string keys")
    try:
        return json.loads(json.dumps(metadata))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be JSON-serialisable ({exc})") from None


def _event(obj: dict, user_id: str, where: str) -> Event:
    if obj.get("user_id") not in (None, user_id):
        raise ValueError(f"{where}: event belongs to user {obj['user_id']!r}, not {user_id!r}")
    obj = {**obj, "user_id": user_id}
    if "id" not in obj:
        obj["id"] = event_id(obj)
    return parse_record(Event, obj, where)


def to_events(data: Addable, user_id: str, metadata: Optional[dict] = None,
              time: Union[str, datetime, None] = None) -> list[Event]:
    """The events to remember for `data`: a text, a chat message, an event object, or a list of
    messages and events. time: when it happened (default now); each remembered item of a list is a
    second after the one before, so turns keep their order (an event object with a time keeps it).
    Raises ValueError naming the item or key that is wrong; then nothing is added."""
    meta = _metadata(metadata)
    if isinstance(data, str):
        items: list = [{"role": None, "content": data}]
    elif isinstance(data, (dict, Event)):
        items = [data]
    elif isinstance(data, list):
        items = data
    else:
        raise ValueError(f"add takes a text, a list of chat messages or an event object; got {type(data).__name__}")
    start = _start_time(time)
    out = []
    for n, item in enumerate(items):
        at = format_time(start + timedelta(seconds=len(out)))
        if isinstance(item, Event):
            item = item.dump()
        # an event object (docs/formats.md section 2) has neither of a chat message's keys
        is_event = isinstance(item, dict) and "role" not in item and "content" not in item
        where = ("text" if isinstance(data, str) else f"item {n}" if isinstance(data, list)
                 else "event" if is_event else "message")
        if is_event:
            obj = {"time": at, **item}
            if meta is not None:
                obj["metadata"] = meta
            out.append(_event(obj, user_id, where))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or "role" not in item:
            raise ValueError(f"{where}: a chat message is a dict with a string 'content' and a 'role'")
        role = item.get("role")
        if role in SKIPPED_ROLES or not item["content"].strip():
            continue
        if role is not None and role not in ROLES:
            raise ValueError(f"{where}: role must be one of {', '.join(ROLES + SKIPPED_ROLES)}; got {role!r}")
        words = " ".join(item["content"].split())
        obj = {"time": at, "audio": words if role is None else f"[{role}] {words}"}
        if meta is not None:
            obj["metadata"] = meta
        out.append(_event(obj, user_id, where))
    return out
