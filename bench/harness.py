"""Benchmark harness: replay each timeline into a system, decide at its last event, judge, score.

Each instance's decision is cached on disk under
  <cfg.bench.cache_dir>/runs/<system>/<config hash>/<instance hash>.json
so an interrupted run resumes where it stopped (the judge keeps its own cache). Instances
that fail are reported by id and left out of the cache, so a rerun tries them again.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from tqdm import tqdm

from bench.judges import JudgeError
from bench.metrics import compute_metrics
from core.config import REPO_ROOT, Config, resolve_path
from core.formats import Decision, Instance
from core.jsonio import atomic_write_json

if TYPE_CHECKING:
    from bench.systems import BenchSystem

log = logging.getLogger(__name__)

CACHE_VERSION = 1
FAIL_FAST = 3  # identical failures, with no success, before a run stops
RETRIEVAL_ONLY_NOTE = ("retrieval only: no reasoner was asked, so only DIR and SCR are measured; "
                       "the decision metrics are null")


class HarnessError(RuntimeError):
    pass


def reasoner_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("reasoner.api") is not None
    except ImportError:
        return False


def instance_hash(instance: Instance) -> str:
    blob = json.dumps(instance.dump(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


ARTIFACT_KEYS = (("reasoner", "gate", "path"), ("memory", "construction", "cue_encoder"),
                 ("memory", "construction", "linker"), ("reasoner", "llm", "adapter"),
                 ("memory", "construction", "llm", "adapter"))


def _fingerprint(path: str | None) -> list | None:
    """Names, sizes and times of a trained artifact's files: retraining in place changes the key."""
    if not path:
        return None
    p = resolve_path(path)
    files = sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else ([p] if p.is_file() else [])
    return [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]


def config_hash(cfg: Config, retrieval_only: bool) -> str:
    """Hash of what can change a decision: the config (less judge settings and cache paths) and the
    trained artifacts it names."""
    data = cfg.model_dump(mode="json")
    data.pop("source", None)
    for key in ("judge", "judge_llm", "cache_dir", "workers"):
        data.get("bench", {}).pop(key, None)
    if not cfg.memory.trigger.enabled:  # a trigger that is off cannot change a decision, whatever its thresholds
        data["memory"].pop("trigger", None)
    artifacts = {}
    for keys in ARTIFACT_KEYS:
        node = data
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        artifacts[".".join(keys)] = _fingerprint(node if isinstance(node, str) else None)
    blob = json.dumps({"cfg": data, "artifacts": artifacts, "retrieval_only": retrieval_only, "v": CACHE_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class Decider:
    """One system (the BenchSystem contract) + the shared reasoner; built once per process."""

    def __init__(self, system_name: str, cfg: Config, retrieval_only: bool):
        from bench.systems import build_system

        try:
            self.system: BenchSystem = build_system(system_name, cfg)
        except Exception as exc:  # missing artifacts, bad config: one clear line, not a traceback
            raise HarnessError(f"cannot build system {system_name!r}: {type(exc).__name__}: {exc}") from exc
        self.retrieval_only = retrieval_only
        self.reasoner = None
        if not retrieval_only:
            if not reasoner_available():
                raise HarnessError("the reasoner (reasoner/api.py) is not installed in this checkout; "
                                   "run with --retrieval-only to measure DIR and SCR")
            from reasoner.api import build_reasoner

            try:
                self.reasoner = build_reasoner(cfg)
            except Exception as exc:
                raise HarnessError(f"cannot build the reasoner ({cfg.reasoner.backend}): {type(exc).__name__}: {exc}; "
                                   "run with --retrieval-only to measure DIR and SCR without it") from exc

    def decide(self, instance: Instance) -> dict[str, Any]:
        from core.tokens import count_tokens

        past, current = instance.events[:-1], instance.events[-1]
        self.system.last_timing = {}
        t0 = time.perf_counter()
        recalled = self.system.recall(instance, past, current)
        t1 = time.perf_counter()
        timing = dict(self.system.last_timing or {"retrieve": round((t1 - t0) * 1000, 2)})
        ids = [r.event.id for r in recalled]
        skipped = getattr(self.system, "last_trigger", None)  # the context trigger (memory/trigger.py)
        if skipped:
            decision = Decision(event_id=current.id, assist=False, retrieved=[], trigger=skipped)
        elif self.reasoner is None:
            decision = Decision(event_id=current.id, assist=False, retrieved=ids, retrieval_only=True)
        else:
            decision = self.reasoner.decide(instance.persona, recalled, current)
            timing["reason"] = round((time.perf_counter() - t1) * 1000, 2)
            if decision.retrieved != ids:
                if decision.retrieved:
                    log.warning("instance %s: reasoner reported retrieved %s, system gave %s; keeping the system's",
                                instance.id, decision.retrieved, ids)
                decision.retrieved = ids
        ordinary = getattr(self.system, "last_ordinary", None)  # the trigger at the timeline's routine moments
        if ordinary is not None:
            decision.ordinary_moments, decision.ordinary_skipped = ordinary.moments, ordinary.skipped
        decision.timing_ms = {**timing, **{k: v for k, v in decision.timing_ms.items() if k not in timing}}
        if decision.context_tokens is None:
            # What the reasoner saw, as text: persona, the recalled events and the current one.
            decision.context_tokens = count_tokens("\n".join([instance.persona, *(r.event.text() for r in recalled),
                                                              current.text()]))
        return decision.dump()

    def close(self) -> None:
        self.system.close()


_WORKER: Decider | None = None


def _init_worker(system_name: str, cfg_data: dict, retrieval_only: bool) -> None:
    global _WORKER
    # N workers on N cores: one thread each. Set before torch is first imported in this fresh
    # (spawned) process, so importing torch here just to say so is not needed.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    _WORKER = Decider(system_name, Config.model_validate(cfg_data), retrieval_only)


def _work(inst_data: dict) -> tuple[str, dict | None, str | None]:
    inst = Instance.model_validate(inst_data)
    try:
        return inst.id, _WORKER.decide(inst), None
    except Exception as exc:  # one broken instance must not end the run
        return inst.id, None, f"{type(exc).__name__}: {exc}"


@dataclass
class SystemRun:
    system: str
    decisions: dict[str, dict] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    cached: int = 0


def run_decisions(instances: Sequence[Instance], system_name: str, cfg: Config, retrieval_only: bool = False,
                  workers: int = 1, fresh: bool = False, progress: bool = True) -> SystemRun:
    """Decision of `system_name` at each instance's decision moment, from cache when there."""
    run = SystemRun(system_name)
    cache = resolve_path(cfg.bench.cache_dir) / "runs" / system_name / config_hash(cfg, retrieval_only)
    todo: list[tuple[Instance, Path]] = []
    for inst in instances:
        path = cache / f"{instance_hash(inst)}.json"
        if not fresh and path.is_file():
            try:
                run.decisions[inst.id] = json.loads(path.read_text(encoding="utf-8"))
                run.cached += 1
                continue
            except ValueError:
                log.warning("cache entry %s unreadable; deciding %s again", path, inst.id)
        todo.append((inst, path))
    if not todo:
        return run
    bar = tqdm(total=len(todo), desc=f"{system_name}", unit="inst", disable=not progress)

    fresh_ok = 0

    def done(iid: str, dec: dict | None, err: str | None, path: Path) -> None:
        nonlocal fresh_ok
        if err is not None:
            log.error("instance %s (system %s): %s", iid, system_name, err)
            run.errors[iid] = err
        else:
            fresh_ok += 1
            run.decisions[iid] = dec
            atomic_write_json(path, dec, indent=None)
        bar.update(1)
        # The same failure on the first few instances is a setup problem (missing artifacts):
        # stop rather than log it once per instance.
        if not fresh_ok and len(run.errors) >= FAIL_FAST and len(set(run.errors.values())) == 1:
            bar.close()
            raise HarnessError(f"system {system_name!r} failed on the first {len(run.errors)} instances with: "
                               f"{next(iter(run.errors.values()))}")

    if workers <= 1:
        decider = Decider(system_name, cfg, retrieval_only)
        try:
            for inst, path in todo:
                try:
                    dec, err = decider.decide(inst), None
                except Exception as exc:
                    dec, err = None, f"{type(exc).__name__}: {exc}"
                done(inst.id, dec, err, path)
        finally:
            decider.close()
    else:
        if workers > (os.cpu_count() or 1):
            log.warning("%d workers on %d cores: each loads its own models; more workers than cores only "
                        "costs memory", workers, os.cpu_count())
        # spawn, not fork: forking a process that already runs torch threads can deadlock.
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_init_worker,
                                   initargs=(system_name, cfg.model_dump(mode="json"), retrieval_only))
        try:
            paths = {inst.id: path for inst, path in todo}
            futures = [pool.submit(_work, inst.dump()) for inst, _ in todo]
            for fut in as_completed(futures):
                try:
                    iid, dec, err = fut.result()
                except BrokenProcessPool as exc:  # a worker could not start (its Decider failed) or died
                    raise HarnessError(f"system {system_name!r}: a worker process failed: {exc}") from exc
                done(iid, dec, err, paths[iid])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    bar.close()
    return run


def judge_and_score(instances: Sequence[Instance], run: SystemRun, judge, retrieval_only: bool,
                    group_by: Sequence[str] = ()) -> dict[str, Any]:
    """RESULT fields (docs/formats.md section 6) for one system's decisions."""
    rows, ok_inst, ok_dec, ok_judged = [], [], [], []
    errors = dict(run.errors)
    judge_failures = []
    for inst in instances:
        dec = run.decisions.get(inst.id)
        row: dict[str, Any] = {"id": inst.id, "variant": inst.variant, "decision": dec, "judged": None}
        if dec is not None and not retrieval_only:
            try:
                row["judged"] = judge.judge(inst, Decision.model_validate(dec))
            except JudgeError as exc:  # endpoint down, unusable answer: this instance only
                errors[inst.id] = f"judge {judge.name}: {exc}"
                log.error("instance %s (system %s): judge failed: %s", inst.id, run.system, exc)
                judge_failures.append(exc)
                # `answered`: model verdicts the judge got so far (silences need none).
                if len(judge_failures) >= FAIL_FAST and not getattr(judge, "answered", 0):
                    # Decisions are cached: once the judge works, a rerun only judges.
                    raise HarnessError(f"the {judge.name} judge failed on the first {len(judge_failures)} "
                                       f"instances it was asked about; last: {exc}") from exc
        if inst.id in errors:
            row["error"] = errors[inst.id]
        else:
            ok_inst.append(inst)
            ok_dec.append(dec)
            ok_judged.append(row["judged"])
        rows.append(row)
    scored = compute_metrics(ok_inst, ok_dec, None if retrieval_only else ok_judged, group_by)
    return {"metrics": scored["metrics"], "extra_metrics": scored["extra"], "breakdown": scored["breakdown"],
            "instances": rows, "errors": errors}


def _repo_relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return path


def run_benchmark(instances: Sequence[Instance], system_name: str, cfg: Config, *, data: str, judge=None,
                  retrieval_only: bool = False, workers: int = 1, fresh: bool = False,
                  progress: bool = True, group_by: Sequence[str] = ()) -> dict[str, Any]:
    """One system over a set of instances: the RESULT.json object."""
    if not retrieval_only and judge is None:
        raise HarnessError("a judge is needed unless the run is retrieval-only")
    t0 = time.perf_counter()
    run = run_decisions(instances, system_name, cfg, retrieval_only, workers, fresh, progress)
    scored = judge_and_score(instances, run, judge, retrieval_only, group_by)
    result = {
        "system": system_name, "data": data, "config": _repo_relative(cfg.source),
        "judge": None if retrieval_only else judge.name,
        "retrieval_only": retrieval_only,
        **scored,
        "run": {"instances": len(instances), "from_cache": run.cached, "failed": len(scored["errors"]),
                "wall_s": round(time.perf_counter() - t0, 2), "k": cfg.memory.retrieval.k},
    }
    if retrieval_only:
        result["note"] = RETRIEVAL_ONLY_NOTE
    # docs/formats.md section 6 order first, the extras after.
    order = ["system", "data", "config", "metrics", "breakdown", "instances"]
    return {k: result[k] for k in order} | {k: v for k, v in result.items() if k not in order}
