"""`promem bench memory --n 10000,100000,1000000`: memory add throughput, retrieval latency, RSS at scale.

At each size the store is filled through the real write path (SQLite WAL + FAISS on disk) with
synthetic memories: random unit vectors stand in for embedded text, because embedding a
million texts takes hours on 2 cores. Each memory is one event with one fact, one event cue,
a time cue for one event in 20 and a state-change link for one in 50. Retrieval latency is
Memory.retrieve given the query vectors (index search + store reads + link expansion); the
cost of embedding the query with the real models is measured separately, as is the add
throughput of real events through the configured constructor (--embedded N).
"""
from __future__ import annotations

import gc
import json
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path


def register(sub) -> None:
    from cli.main import add_config_arg

    p = sub.add_parser("memory", help="memory scale: add throughput, retrieval p50/p95, resident memory")
    p.add_argument("--n", default="10000,100000", help="memory sizes, comma-separated (e.g. 10000,100000,1000000)")
    p.add_argument("--index", help="index types to measure, comma-separated (default: memory.index.type)")
    p.add_argument("--queries", type=int, default=200, help="retrievals timed per size")
    p.add_argument("--embedded", type=int, default=300,
                   help="real events added through the configured constructor to time embedding (0: skip)")
    p.add_argument("--threads", type=int, default=1, help="FAISS / torch threads (1: single queries gain nothing from more)")
    p.add_argument("--workdir", default=".cache/bench/memory-scale", help="where the stores are built (deleted after)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", help="write the result JSON here")
    add_config_arg(p)
    p.set_defaults(func=run)


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _pct(xs: list[float], q: float) -> float:
    import numpy as np

    return round(float(np.percentile(xs, q)), 3)


class _QueryOnly:
    """Constructor for a synthetic store: real embedders (for query timing), no construction."""

    def __init__(self, cfg):
        from core.providers import build_embedder

        self.content = build_embedder(cfg.memory.embedder)
        self.cue = self.content


def _fill(mem, n: int, dim: int, rng, chunk: int, t0: datetime, bar) -> None:
    import numpy as np

    from core.formats import Event
    from memory.store import Built, NewCue, NewLink

    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        v = rng.standard_normal((3, m, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=2, keepdims=True)
        built = []
        for j in range(m):
            i = s + j
            t = t0 + timedelta(minutes=10 * i)
            e = Event(id=f"s{i}", time=t.isoformat(), location="somewhere", visual=f"synthetic memory {i}")
            b = Built(event=e, ts=t.timestamp(), vec=v[0, j], facts=[(e.visual, v[1, j])],
                      cues=[NewCue("event", e.visual, v[2, j])])
            if i % 20 == 0:
                b.cues.append(NewCue("time", "tomorrow", None, t.timestamp() + 86400, t.timestamp() + 2 * 86400))
            if i % 50 == 49:
                b.links = [NewLink(f"s{int(rng.integers(0, i))}", "state_change", 0.9)]
            built.append(b)
        mem.add_built(built)
        bar.update(m)


def _measure_embedded(cfg, n: int, workdir: Path) -> dict:
    """Real event text (eight generated timelines, cycled under fresh ids) through the configured constructor."""
    from bench.generator.engine import generate
    from memory.api import open_memory

    base = [e for inst in generate(8, 0, "train") for e in inst.events]
    events = [base[i % len(base)].model_copy(update={"id": f"x{i}"}) for i in range(n)]
    store = workdir / "embedded"
    shutil.rmtree(store, ignore_errors=True)
    mem = open_memory(cfg, store, "bench")  # loads the models before the clock starts
    t = time.perf_counter()
    mem.add_many(events)
    secs = time.perf_counter() - t
    q = []
    for e in events[:50]:
        t = time.perf_counter()
        mem.retrieve(e.model_copy(update={"id": "q"}))
        q.append(1000 * (time.perf_counter() - t))
    mem.close()
    shutil.rmtree(store, ignore_errors=True)
    return {"events": n, "constructor": cfg.memory.construction.backend, "add_events_per_s": round(n / secs, 1),
            "retrieve_with_query_embedding_ms": {"p50": _pct(q, 50), "p95": _pct(q, 95)}}


def run(args) -> int:
    import faiss
    import numpy as np
    import torch
    from tqdm import tqdm

    from cli.main import config_from
    from core.formats import Event
    from memory.api import open_memory
    from memory.construct.artifacts import MissingArtifact

    cfg = config_from(args)
    # Time the models, not the vector cache: this benchmark embeds one query over and over and
    # ingests the same generated events many times.
    cfg.memory.embedder.cache_size = 0
    faiss.omp_set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    try:
        sizes = [int(float(x)) for x in args.n.split(",") if x.strip()]
    except ValueError:
        print(f"promem bench memory: --n must be numbers separated by commas, got {args.n!r}", file=sys.stderr)
        return 2
    kinds = (args.index or cfg.memory.index.type).split(",")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    con = _QueryOnly(cfg)
    dim = con.content.dim
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    result = {"command": "promem bench memory " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else "promem bench memory",
              "config": cfg.source, "threads": args.threads, "synthetic_vectors": True, "runs": []}

    emb = []
    for _ in range(30):
        t = time.perf_counter()
        con.content.encode(["Walking past a party-supply shop with balloons in the window."])
        emb.append(1000 * (time.perf_counter() - t))
    result["query_embedding_ms"] = {"p50": _pct(emb, 50), "p95": _pct(emb, 95),
                                    "note": "per model; the encoder profile embeds each query twice (content + cue)"}

    for kind in kinds:
        cfg.memory.index.type = kind
        for n in sizes:
            store = workdir / f"{kind}-{n}"
            shutil.rmtree(store, ignore_errors=True)
            gc.collect()
            rss0 = _rss_mb()
            mem = open_memory(cfg, store, "bench", constructor=con)
            t = time.perf_counter()
            with tqdm(total=n, desc=f"fill {kind} {n}", unit="memory") as bar:
                _fill(mem, n, dim, rng, 10000, t0, bar)
            mem.save()
            add_s = time.perf_counter() - t
            rss = _rss_mb()
            lat = []
            q = rng.standard_normal((args.queries, 2, dim)).astype(np.float32)
            q /= np.linalg.norm(q, axis=2, keepdims=True)
            for i in range(args.queries):
                now = t0 + timedelta(minutes=10 * int(rng.integers(n // 2, n + 1)))
                cur = Event(id="query", time=now.isoformat(), visual="now")
                t = time.perf_counter()
                got = mem.retrieve(cur, vectors=(q[i, 0], q[i, 1]))
                lat.append(1000 * (time.perf_counter() - t))
                assert got, "retrieval returned nothing from a full store"
            mem.close()
            t = time.perf_counter()
            mem = open_memory(cfg, store, "bench", constructor=con)
            reopen_s = time.perf_counter() - t
            mem.close()
            disk = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
            run_ = {"index": kind, "n": n, "add_events_per_s": round(n / add_s, 1), "add_seconds": round(add_s, 1),
                    "retrieve_ms": {"p50": _pct(lat, 50), "p95": _pct(lat, 95), "max": round(max(lat), 3)},
                    "rss_mb": round(rss, 1), "rss_growth_mb": round(rss - rss0, 1),
                    "reopen_seconds": round(reopen_s, 2), "disk_mb": round(disk / 2**20, 1)}
            result["runs"].append(run_)
            print(json.dumps(run_), flush=True)
            shutil.rmtree(store, ignore_errors=True)
            del mem
            gc.collect()

    if args.embedded:
        cfg.memory.index.type = kinds[0]
        try:
            result["embedded"] = _measure_embedded(cfg, args.embedded, workdir)
            print(json.dumps({"embedded": result["embedded"]}), flush=True)
        except MissingArtifact as exc:
            print(f"promem bench memory: skipping --embedded: {exc}", file=sys.stderr)
    if args.output:
        from core.jsonio import atomic_write_json

        atomic_write_json(args.output, result)
        print(f"wrote {args.output}")
    return 0
