"""Service latency over real HTTP: the app on a loopback port, users posting their timelines.

Each user replays one CPMBench instance's events, one event per POST as a wearable would send
them live, the users interleaved; every request's wall time is recorded client-side. The store
is a fresh folder, so the figures include memory growth from empty.
"""
from __future__ import annotations

import logging
import os
import socket
import statistics
import threading
import time
from pathlib import Path
from typing import Sequence

from core.formats import Instance


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pct(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def run_bench(cfg, instances: Sequence[Instance], store: str | Path, progress: bool = True) -> dict:
    import httpx
    import psutil
    import uvicorn
    from tqdm import tqdm

    from serve.app import create_app

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown the progress bar
    logging.getLogger("serve.app").setLevel(logging.WARNING)
    t0 = time.perf_counter()
    app = create_app(cfg, store)
    startup_s = time.perf_counter() - t0
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the service did not start")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    queues = [[(f"bench-user-{u}", e.dump()) for e in sorted(inst.events, key=lambda e: (e.dt, e.id))]
              for u, inst in enumerate(instances)]
    # Round-robin over users: each request finds another user's memory open, as on a shared server.
    order = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
    latencies, reason_ms, retrieve_ms, assists, errors = [], [], [], 0, 0
    try:
        with httpx.Client(timeout=300) as client:
            for user, ev in tqdm(order, desc="bench serve", unit="event", disable=not progress):
                t = time.perf_counter()
                r = client.post(f"{url}/v1/users/{user}/events", json=ev)
                latencies.append((time.perf_counter() - t) * 1000)
                if r.status_code != 200:
                    errors += 1
                    continue
                d = r.json()
                assists += int(d["assist"])
                retrieve_ms.append(d["timing_ms"].get("retrieve", 0.0))
                reason_ms.append(d["timing_ms"].get("reason", 0.0))
    finally:
        server.should_exit = True
        thread.join(timeout=60)
    total_s = sum(latencies) / 1000
    rss = psutil.Process(os.getpid()).memory_info().rss / 2 ** 20
    return {
        "config": cfg.source,
        "reasoner": cfg.reasoner.backend,
        "users": len(instances),
        "events": len(latencies),
        "http_errors": errors,
        "assist": assists,
        "startup_s": round(startup_s, 2),
        "request_ms": {"p50": round(_pct(latencies, 0.5), 1), "p95": round(_pct(latencies, 0.95), 1),
                       "mean": round(statistics.fmean(latencies), 1)} if latencies else None,
        "retrieve_ms_p50": round(_pct(retrieve_ms, 0.5), 1) if retrieve_ms else None,
        "reason_ms_p50": round(_pct(reason_ms, 0.5), 1) if reason_ms else None,
        "events_per_s": round(len(latencies) / total_s, 2) if total_s else None,
        "rss_mb": round(rss, 1),
    }
