"""The HTTP service: a wearable (or its phone) posts sensory-context events, and gets decisions.

  POST /v1/users/{user_id}/events     one event (docs/formats.md section 2) or a JSON list of them
                                      -> the Decision (docs/formats.md section 4), or a list in request order
  PUT  /v1/users/{user_id}/profile    {"persona": "..."}: the personal context the reasoner sees
  GET  /v1/users/{user_id}/recall?event_id=ID[&k=N]   what memory recalls at a remembered event
  GET  /v1/users/{user_id}/intentions[?status=S]      the user's intention records (docs/formats.md section 7)
  POST /v1/users/{user_id}/intentions/{id}/dismiss    the user's "no thanks": the record, now dismissed
  GET  /v1/users/{user_id}/brief[?at=TIME&location=TEXT&budget=N]   what is pending and relevant now (memory/brief.py)
  GET  /healthz
With $PROMEMAGENT_SERVE_TOKEN (serve.token_env) set, every request but /healthz (/docs and
/openapi.json included) needs "Authorization: Bearer <token>".

Every user has their own memory and decision log (serve/sessions.py); nothing one user sent is
ever recalled for another. A malformed event is answered 422 with the event and the key, and
nothing of that request is ingested, so the client can fix it and resend the whole request. A body
over limits.max_body_bytes is answered 413 as soon as that many bytes have arrived (it is never
parsed), a text field over its cap (cfg.limits) 422 naming the event and the key.
An event id names one event: the same event sent again gets its first decision, and an id sent
again with other content is answered 409 naming the id (nothing of that request is ingested).
Models are not thread-safe and are CPU/GPU-bound, so all memory and reasoner work runs on one
worker thread; the event loop stays free for /healthz.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse

from core.config.limits import LimitsConfig
from core.formats import Event, Profile, parse_record
from core.limits import oversized
from core.timeutil import parse_time
from memory.intentions import STATES
from serve.sessions import EventConflict, Sessions, check_user_id

log = logging.getLogger(__name__)


def _error(status: int, message: str, errors: Optional[list[str]] = None) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": message, "errors": errors or [message]})


class BodyTooLarge(ValueError):
    pass


class BodyTimeout(ValueError):
    pass


async def _json_body(request: Request, max_bytes: int, timeout_s: float) -> Any:
    """The parsed body, read in chunks and given up past max_bytes (413), before any parsing."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge(f"request body of {declared} bytes; at most {max_bytes} (limits.max_body_bytes)")
    chunks, size = [], 0

    async def read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise BodyTooLarge(f"request body over {max_bytes} bytes (limits.max_body_bytes)")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout_s)
    except asyncio.TimeoutError:
        raise BodyTimeout(f"request body not received within {timeout_s:g} s (serve.body_timeout_s)") from None
    try:
        return json.loads(b"".join(chunks))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("request body is not valid JSON: nested too deeply") from None


def parse_events(body: Any, user_id: str, max_events: int, limits=None) -> list[Event]:
    """Validate every event first; raises ValueError listing each bad one with its key.
    limits: cfg.limits (default: its defaults), the size cap of each text field."""
    limits = limits or LimitsConfig()
    items = body if isinstance(body, list) else [body]
    if not items:
        raise ValueError("an empty list holds no events")
    if len(items) > max_events:
        raise ValueError(f"{len(items)} events in one request; at most {max_events} (serve.max_events)")
    events, problems = [], []
    for i, obj in enumerate(items):
        where = f"event {i}" if isinstance(body, list) else "event"
        try:
            ev = parse_record(Event, obj, where)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if why := oversized(ev, limits):
            problems.append(f"{where} (id {ev.id[:80]!r}): {why}")
            continue
        if ev.user_id not in (None, user_id):
            problems.append(f"{where} (id {ev.id!r}): key 'user_id' is {ev.user_id!r}, but it was posted for "
                            f"user {user_id!r}")
            continue
        events.append(ev.model_copy(update={"user_id": user_id}))
    if problems:
        raise ValueError("; ".join(problems))
    return events


def recalled_json(r) -> dict:
    return {"event": r.event.dump(), "score": round(float(r.score), 4), "path": r.path, "fact": r.fact,
            "links": [{"event_id": link.event_id, "kind": link.kind, "score": round(float(link.score), 4)}
                      for link in r.links]}


def create_app(cfg, store: str | Path, reasoner=None) -> FastAPI:
    """cfg: core.config.Config; store: the memory store folder; reasoner: default build_reasoner(cfg)."""
    from memory.api import open_memory

    # Load the memory models now (they are shared process-wide), so a missing artifact stops the
    # start with its message instead of failing the first request.
    open_memory(cfg, None, "_startup_check").close()
    if reasoner is None:
        from reasoner.api import build_reasoner

        reasoner = build_reasoner(cfg)
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="promem-serve")
    sessions = Sessions(cfg, Path(store), reasoner, cfg.serve.max_open_users)
    max_events, max_body, body_timeout = cfg.serve.max_events, cfg.limits.max_body_bytes, cfg.serve.body_timeout_s

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await asyncio.get_running_loop().run_in_executor(worker, sessions.close)
        worker.shutdown(wait=True)

    app = FastAPI(title="promemagent", version="1", lifespan=lifespan,
                  description="Proactive memory assistant: events in, decisions out.")
    app.state.sessions = sessions
    token = os.environ.get(cfg.serve.token_env) or None

    @app.middleware("http")
    async def require_token(request: Request, call_next):
        # Everything but the liveness probe, the API docs and schema included: they describe the service
        # to whoever can reach it.
        if token is not None and request.url.path != "/healthz":
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return _error(401, f"missing or wrong bearer token (the server reads it from ${cfg.serve.token_env})")
        return await call_next(request)

    async def on_worker(fn):
        # Getting a session and using it is one job: between two jobs the session could be evicted.
        return await asyncio.get_running_loop().run_in_executor(worker, fn)

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok", "profile": cfg.profile, "reasoner": cfg.reasoner.backend, "users_open": len(sessions)}

    @app.post("/v1/users/{user_id}/events")
    async def post_events(user_id: str, request: Request):
        if why := check_user_id(user_id):
            return _error(422, f"path parameter 'user_id': {why}")
        try:
            body = await _json_body(request, max_body, body_timeout)
            events = parse_events(body, user_id, max_events, cfg.limits)
        except BodyTooLarge as exc:
            return _error(413, str(exc))
        except BodyTimeout as exc:
            return _error(408, str(exc))
        except ValueError as exc:
            log.info("user %r: rejected request: %s", user_id, exc)
            return _error(422, str(exc), str(exc).split("; "))
        t0 = time.perf_counter()
        try:
            decided = await on_worker(lambda: sessions.get(user_id).ingest(events))
        except EventConflict as exc:
            log.info("user %r: rejected request: %s", user_id, exc)
            return _error(409, str(exc))
        log.debug("user %r: %d event(s) decided in %.0f ms", user_id, len(events), (time.perf_counter() - t0) * 1000)
        out = [decided[e.id] for e in events]
        return out if isinstance(body, list) else out[0]

    @app.put("/v1/users/{user_id}/profile")
    async def put_profile(user_id: str, request: Request):
        if why := check_user_id(user_id):
            return _error(422, f"path parameter 'user_id': {why}")
        try:
            body = await _json_body(request, max_body, body_timeout)
            profile = parse_record(Profile, body, "profile")
        except BodyTooLarge as exc:
            return _error(413, str(exc))
        except BodyTimeout as exc:
            return _error(408, str(exc))
        except ValueError as exc:
            return _error(422, str(exc))
        if not isinstance(profile.persona, str):
            return _error(422, "profile: key 'persona' must be a string")
        if len(profile.persona) > cfg.limits.max_text_chars:
            return _error(422, f"profile: key 'persona' has {len(profile.persona)} characters; at most "
                               f"{cfg.limits.max_text_chars} (limits.max_text_chars)")
        profile = profile.model_copy(update={"user_id": user_id})
        await on_worker(lambda: sessions.get(user_id).set_profile(profile))
        return profile.dump()

    @app.get("/v1/users/{user_id}/recall")
    async def recall(user_id: str, event_id: str = Query(..., min_length=1), k: Optional[int] = Query(None, ge=1, le=100)):
        if why := check_user_id(user_id):
            return _error(422, f"path parameter 'user_id': {why}")
        t0 = time.perf_counter()
        got = await on_worker(lambda: sessions.get(user_id).recall(event_id, k))
        if got is None:
            return _error(404, f"event {event_id!r} is not in the memory of user {user_id!r}")
        return {"event_id": event_id, "recalled": [recalled_json(r) for r in got],
                "timing_ms": {"retrieve": round((time.perf_counter() - t0) * 1000, 2)}}

    @app.get("/v1/users/{user_id}/intentions")
    async def intentions(user_id: str, status: Optional[str] = Query(None)):
        if why := check_user_id(user_id):
            return _error(422, f"path parameter 'user_id': {why}")
        if status is not None and status not in STATES:
            return _error(422, f"query parameter 'status': {status[:40]!r} is not one of {', '.join(STATES)}")
        got = await on_worker(lambda: sessions.get(user_id).intentions(status))
        return {"user_id": user_id, "intentions": [r.model_dump(mode="json") for r in got]}

    @app.post("/v1/users/{user_id}/intentions/{intention_id}/dismiss")
    async def dismiss(user_id: str, intention_id: str):
        if why := check_user_id(user_id):
            return _error(422, f"path parameter 'user_id': {why}")
        rec = await on_worker(lambda: sessions.get(user_id).dismiss(intention_id))
        if rec is None:
            return _error(404, f"intention {intention_id[:80]!r} is not one of user {user_id!r}")
        if rec.status != "dismissed":
            return _error(409, f"intention {intention_id!r} is already {rec.status}; only an open or raised "
                               f"intention can be dismissed")
        return rec.model_dump(mode="json")

    @app.get("/v1/users/{user_id}/brief")
    async def brief(user_id: str, at: Optional[str] = Query(None),
                    location: Optional[str] = Query(None, max_length=512),
                    budget: Optional[int] = Query(None, ge=1, le=100000)):
        if why := check_user_id(user_id):
            return _error(422, f"path parameter 'user_id': {why}")
        try:
            when = parse_time(at) if at else datetime.now(timezone.utc)
        except ValueError as exc:
            return _error(422, f"query parameter 'at': {exc}")
        got = await on_worker(lambda: sessions.get(user_id).brief(when, location, budget))
        return got.model_dump(mode="json")

    return app
