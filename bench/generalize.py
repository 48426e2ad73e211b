"""Cross-validation by category: how the trained models do on kinds of situation they never saw.

Each fold holds out whole generator categories. Every trained model of the config (cue encoder,
linker, gate with its now head when CAB's train split is at hand, thing reader) is trained by its recipe's
train() on timelines generated from the OTHER categories' train-split seeds only (plus the
hand-written training timelines of training.extra_data in those categories), then every
system is run on timelines generated from the held-out categories' seeds of BOTH splits (no
model saw any seed of a held-out category, so its test-split seeds are as unseen as its train
ones; using both doubles the scenarios a fold is tested on). Training keeps to the train split
so that a fold's models differ from the product's only by the categories left out.

Layout under the output folder (a rerun reuses what is there):
  folds/<held-out categories>/train.jsonl, test.jsonl     the fold's timelines
  folds/<...>/artifacts/{cue-encoder,linker,gate,thing-reader}  its models, each with meta.json
  folds/<...>/RESULT.<system>.json, fold.json             its results; fold.json marks them done
  cache/                                                  the harness's decision cache
  generalize.json, generalize.md                          the report
A model is retrained only when its artifact is stale or was trained on other data or another
recipe; a system is rerun in a fold only when fold.json lacks it for the same settings.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

from pydantic import BaseModel, ConfigDict
from tqdm import tqdm

from core.artifacts import ArtifactMeta, read_meta, stale_reason
from core.config import Config
from core.formats import METRIC_KEYS, Instance
from core.jsonio import atomic_write_json, atomic_write_text

log = logging.getLogger(__name__)

SYSTEMS = ("promem", "no-memory", "full-context", "rag-bm25", "rag-embed")
# promem with memory.trigger.enabled, on the same fold models; asked for beside the systems above
TRIGGER_SYSTEM = "promem+trigger"
REPORT_JSON = "generalize.json"
REPORT_MD = "generalize.md"
FOLD_FILE = "fold.json"
TEST_DATA_NOTE = ("trained on the train-split seeds of the other categories; tested on the held-out "
                  "categories' seeds of both splits (no model saw any seed of those categories)")


class GeneralizeError(ValueError):
    pass


class Settings(BaseModel):
    """What one `promem bench generalize` run is asked for."""
    model_config = ConfigDict(extra="forbid")
    folds: Optional[int] = None  # None: leave one category out; N: categories grouped into N folds
    n_train: int = 400           # generated training timelines per fold
    n_test: int = 40             # generated test timelines per held-out category
    seed: int = 0                # generation seed of the training timelines; the test ones use seed + 1
    systems: list[str] = list(SYSTEMS)
    judge: Optional[str] = None  # None: the config's bench.judge
    workers: int = 1
    recipes: dict[str, str] = {}  # recipe name (cue-encoder, linker, gate) -> its YAML; default: training/configs


class FoldPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: int
    held_out: list[str]
    train_categories: list[str]

    @property
    def name(self) -> str:
        return "+".join(self.held_out)


class SystemFigures(BaseModel):
    """One system's figures on one fold's test timelines (its full RESULT file lies beside)."""
    model_config = ConfigDict(extra="forbid")
    metrics: dict[str, Optional[float]]
    extra_metrics: dict[str, Any] = {}
    instances: int
    failed: int
    wall_s: float


class FoldResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fold: int
    held_out: list[str]
    train_categories: list[str]
    key: str                       # the settings it was made with; another key means redo
    n_train: int
    n_test: int
    train_seeds: list[str]         # scenario seed ids of its training timelines
    test_seeds: list[str]
    models: dict[str, ArtifactMeta] = {}
    retrained: list[str] = []      # the models trained in the run that last touched this fold
    train_s: float = 0.0           # training time of its models as they stand (from their records)
    eval_s: float = 0.0
    results: dict[str, SystemFigures] = {}
    errors: dict[str, str] = {}    # system or "train" -> what went wrong


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")
    settings: Settings
    config: str
    categories: list[str]
    test_data: str = TEST_DATA_NOTE
    folds: list[FoldResult]
    mean: dict[str, dict[str, Optional[float]]]     # system -> metric -> mean over the folds that ran it
    worst_fd: dict[str, Optional[float]]            # system -> highest FD of any fold
    wall_s: float                                   # this invocation
    folds_wall_s: float                             # all folds' training + evaluation, as recorded
    date: str


# -- folds ----------------------------------------------------------------------------------------
def plan_folds(categories: Sequence[str], folds: Optional[int] = None) -> list[FoldPlan]:
    """Leave-one-category-out, or the categories dealt round-robin into `folds` groups."""
    cats = list(categories)
    if len(cats) < 2:
        raise GeneralizeError(f"cross-validation by category needs at least two categories with seeds, found {cats}")
    n = len(cats) if folds is None else folds
    if not 2 <= n <= len(cats):
        raise GeneralizeError(f"--folds must be between 2 and the number of categories ({len(cats)}), got {n}")
    groups = [[c for i, c in enumerate(cats) if i % n == k] for k in range(n)]
    return [FoldPlan(index=k, held_out=g, train_categories=[c for c in cats if c not in g])
            for k, g in enumerate(groups)]


def fold_data(plan: FoldPlan, s: Settings, extra: Sequence[Instance] = ()) -> tuple[list[Instance], list[Instance]]:
    """(training timelines, test timelines) of one fold. extra: the hand-written training timelines
    (training.extra_data); those of the fold's training categories join its training timelines."""
    from bench.generator.engine import ALL, generate

    train = generate(s.n_train, s.seed, "train", categories=plan.train_categories)
    train += [i for i in extra if i.category in plan.train_categories]
    test = generate(s.n_test * len(plan.held_out), s.seed + 1, ALL, categories=plan.held_out)
    return train, test


def extra_training(cfg: Config) -> list[Instance]:
    """The instances of training.extra_data, as `promem train` joins them (missing files skipped)."""
    from core.config import resolve_path
    from training.data import load_instances

    paths = [resolve_path(p) for p in cfg.training.extra_data]
    for p in paths:
        if not p.is_file():
            log.warning("no extra training data at %s (training.extra_data); folds train without it", p)
    return [i for p in paths if p.is_file() for i in load_instances(p)]


def _write_jsonl(path: Path, instances: Sequence[Instance]) -> None:
    atomic_write_text(path, "".join(json.dumps(i.dump(), ensure_ascii=False) + "\n" for i in instances))


def _seed_ids(instances: Sequence[Instance]) -> list[str]:
    from training.data import group_key

    return sorted({group_key(i) for i in instances})


# -- the fold's models ----------------------------------------------------------------------------
class FoldModels(BaseModel):
    """Where a fold's models are, as the config names them ("base" / "none" stay as they are)."""
    model_config = ConfigDict(extra="forbid")
    cue_encoder: str
    linker: str
    gate: Optional[str]  # None: the reasoner needs no gate
    thing_reader: Optional[str] = None  # None: messages composed by rule (no gate, or none configured)


def fold_models(cfg: Config, folder: Path) -> FoldModels:
    c = cfg.memory.construction
    return FoldModels(cue_encoder="base" if c.cue_encoder == "base" else str(folder / "cue-encoder"),
                      linker="none" if c.linker == "none" else str(folder / "linker"),
                      gate=str(folder / "gate") if cfg.reasoner.backend in ("gate", "cascade") else None,
                      thing_reader=str(folder / "thing-reader")
                      if cfg.reasoner.backend in ("gate", "cascade") and cfg.reasoner.gate.thing_reader else None)


def fold_config(cfg: Config, models: FoldModels, fold_dir: Path, cache: Path) -> Config:
    """The config with the fold's models, a store of its own and the run's decision cache."""
    data = cfg.model_dump()
    data["memory"]["construction"]["cue_encoder"] = models.cue_encoder
    data["memory"]["construction"]["linker"] = models.linker
    data["memory"]["store"] = str(fold_dir / "store")
    if models.gate:
        data["reasoner"]["gate"]["path"] = models.gate
    data["reasoner"]["gate"]["thing_reader"] = models.thing_reader
    data["bench"]["cache_dir"] = str(cache)
    return Config.model_validate(data)


def _reusable(path: str, version: int, data_hash: str, recipe: BaseModel, cue_spec: Optional[str] = None) -> bool:
    """Whether the artifact at `path` is current, from this data and this recipe."""
    if stale_reason(path, version, cue_spec) is not None:
        return False
    meta = read_meta(path)
    return meta is not None and meta.data_hash == data_hash and meta.recipe == recipe.model_dump()


def recipe_modules() -> dict:
    from training.recipes import cue_encoder, gate, linker, thing_reader

    return {m.NAME: m for m in (cue_encoder, linker, gate, thing_reader)}


def load_recipes(s: Settings) -> dict[str, BaseModel]:
    """Each trained model's recipe: the YAML named in the settings, else its default."""
    mods = recipe_modules()
    unknown = sorted(set(s.recipes) - set(mods))
    if unknown:
        raise GeneralizeError(f"no recipe named {', '.join(unknown)}; the trained models are {', '.join(mods)}")
    return {name: mod.load_recipe(s.recipes.get(name)) for name, mod in mods.items()}


def train_fold(cfg: Config, models: FoldModels, train_path: Path, instances: Sequence[Instance],
               recipes: dict[str, BaseModel],
               now_instances: Sequence[Instance] = ()) -> tuple[dict[str, ArtifactMeta], list[str]]:
    """Train (or keep) each model the config uses, by its recipe's train(); returns their records
    and the names of those trained now. The cue encoder comes first: the others read its vectors."""
    from memory.construct.artifacts import CUE_ENCODER_VERSION, LINKER_VERSION
    from reasoner.gate.model import VERSION as GATE_VERSION
    from reasoner.gate.thing_reader import VERSION as READER_VERSION
    from training import data
    from training.recipes import cue_encoder, gate, linker, thing_reader

    src, dhash = str(train_path), data.data_hash(train_path)
    metas: dict[str, ArtifactMeta] = {}
    trained: list[str] = []
    if models.cue_encoder != "base":
        r = recipes[cue_encoder.NAME]
        if not _reusable(models.cue_encoder, CUE_ENCODER_VERSION, dhash, r):
            cue_encoder.train(instances, Path(models.cue_encoder), r, src, dhash)
            trained.append(cue_encoder.NAME)
        metas[cue_encoder.NAME] = read_meta(models.cue_encoder)
    if models.linker != "none":
        r = recipes[linker.NAME]
        if not _reusable(models.linker, LINKER_VERSION, dhash, r, models.cue_encoder):
            linker.train(instances, Path(models.linker), r, cfg.memory.embedder, src, dhash,
                         cfg.memory.construction.link_candidates, models.cue_encoder)
            trained.append(linker.NAME)
        metas[linker.NAME] = read_meta(models.linker)
    if models.gate:
        r = recipes[gate.NAME]
        if not _reusable(models.gate, GATE_VERSION, dhash, r, models.cue_encoder if r.cue_features else None):
            gate.train(instances, r, Path(models.gate), now_instances=now_instances, cue_spec=models.cue_encoder,
                       source=src, data_hash=dhash)
            trained.append(gate.NAME)
        metas[gate.NAME] = read_meta(models.gate)
    if models.thing_reader:
        r = recipes[thing_reader.NAME]
        if not _reusable(models.thing_reader, READER_VERSION, dhash, r):
            thing_reader.train(instances, r, Path(models.thing_reader), src, dhash)
            trained.append(thing_reader.NAME)
        metas[thing_reader.NAME] = read_meta(models.thing_reader)
    return metas, trained


def _train_seconds(metas: dict[str, ArtifactMeta]) -> float:
    return round(sum((m.seconds or 0.0) + ((m.now.seconds or 0.0) if m.now else 0.0) for m in metas.values()), 1)


# -- one fold ---------------------------------------------------------------------------------------
def settings_key(plan: FoldPlan, s: Settings, cfg: Config, recipes: dict[str, BaseModel]) -> str:
    """What a fold's results depend on besides the models (whose records are checked apart)."""
    c = cfg.model_dump(mode="json")
    c.pop("source", None)
    for k in ("cache_dir", "workers"):
        c["bench"].pop(k, None)
    blob = {"held_out": plan.held_out, "train": plan.train_categories, "n_train": s.n_train, "n_test": s.n_test,
            "seed": s.seed, "judge": s.judge or cfg.bench.judge, "cfg": c,
            "recipes": {name: r.model_dump() for name, r in recipes.items()}}
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def load_fold(path: Path, key: str) -> Optional[FoldResult]:
    """The fold's record if it was made with these settings, else None (unreadable: redone)."""
    if not path.is_file():
        return None
    try:
        done = FoldResult.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        log.warning("%s unreadable (%s); the fold is redone", path, exc)
        return None
    return done if done.key == key else None


def system_run(system: str, cfg: Config) -> tuple[str, Config]:
    """(the bench system, its config) behind a name of --systems: TRIGGER_SYSTEM is promem with the
    context trigger on (memory/trigger.py), its thresholds as the config sets them."""
    if system != TRIGGER_SYSTEM:
        return system, cfg
    on = cfg.model_copy(deep=True)
    on.memory.trigger.enabled = True
    return "promem", on


def _to_run(fold: FoldResult, systems: Sequence[str]) -> list[str]:
    """The systems a fold still lacks figures for, or whose run had failed instances (the
    harness retries those)."""
    return [x for x in systems if x not in fold.results or fold.results[x].failed]


def run_fold(plan: FoldPlan, s: Settings, cfg: Config, out: Path, judge, recipes: dict[str, BaseModel],
             now_instances: Sequence[Instance] = (), progress: bool = True,
             extra: Sequence[Instance] = ()) -> FoldResult:
    from bench.harness import HarnessError, run_benchmark
    from bench.systems import SystemUnavailable
    from training.errors import TrainingError

    fold_dir = out / "folds" / plan.name
    key = settings_key(plan, s, cfg, recipes)
    done = load_fold(fold_dir / FOLD_FILE, key)
    if done is not None and not _to_run(done, s.systems):
        return done  # trained and evaluated for every asked system: nothing to do
    train, test = fold_data(plan, s, extra)
    fold_dir.mkdir(parents=True, exist_ok=True)
    train_path, test_path = fold_dir / "train.jsonl", fold_dir / "test.jsonl"
    _write_jsonl(train_path, train)
    _write_jsonl(test_path, test)
    result = done or FoldResult(fold=plan.index, held_out=plan.held_out, train_categories=plan.train_categories,
                                key=key, n_train=len(train), n_test=len(test),
                                train_seeds=_seed_ids(train), test_seeds=_seed_ids(test))
    result.errors = {}
    models = fold_models(cfg, fold_dir / "artifacts")
    try:
        result.models, result.retrained = train_fold(cfg, models, train_path, train, recipes, now_instances)
    except TrainingError as exc:
        result.errors["train"] = str(exc)
        log.error("fold %s: training failed: %s", plan.name, exc)
        atomic_write_json(fold_dir / FOLD_FILE, result.model_dump(mode="json"))
        return result
    result.train_s = _train_seconds(result.models)
    fcfg = fold_config(cfg, models, fold_dir, out / "cache")
    if result.retrained:  # new models: every system's figures are redone
        result.results, result.eval_s = {}, 0.0
    t0 = time.perf_counter()
    for system in _to_run(result, s.systems):
        name, scfg = system_run(system, fcfg)
        try:
            r = run_benchmark(test, name, scfg, data=str(test_path), judge=judge, workers=s.workers,
                              progress=progress)
            r["system"] = system
        except (HarnessError, SystemUnavailable, ValueError) as exc:
            # one system that cannot run must not cost the others' results; a rerun tries it again
            result.errors[system] = str(exc)
            result.results.pop(system, None)
            log.error("fold %s: %s: %s", plan.name, system, exc)
            continue
        atomic_write_json(fold_dir / f"RESULT.{system}.json", r)
        result.results[system] = SystemFigures(metrics=r["metrics"], extra_metrics=r["extra_metrics"],
                                               instances=r["run"]["instances"], failed=r["run"]["failed"],
                                               wall_s=r["run"]["wall_s"])
    result.eval_s = round(result.eval_s + time.perf_counter() - t0, 1)
    atomic_write_json(fold_dir / FOLD_FILE, result.model_dump(mode="json"))
    return result


# -- the whole run ----------------------------------------------------------------------------------
def summarize(folds: Sequence[FoldResult], systems: Sequence[str]) -> tuple[dict, dict]:
    """(system -> metric -> mean over the folds that have it, system -> worst fold FD)."""
    mean, worst = {}, {}
    for system in systems:
        rows = [f.results[system].metrics for f in folds if system in f.results]
        mean[system] = {}
        for k in METRIC_KEYS:
            vals = [r[k] for r in rows if r.get(k) is not None]
            mean[system][k] = round(sum(vals) / len(vals), 1) if vals else None
        fds = [r["FD"] for r in rows if r.get("FD") is not None]
        worst[system] = max(fds) if fds else None
    return mean, worst


def load_now(cfg: Config, gate_recipe) -> list[Instance]:
    """CAB's train moments for the gate's now head, found as `promem train gate` finds them."""
    if cfg.reasoner.backend not in ("gate", "cascade"):
        return []
    from training.recipes import gate

    return gate.load_now_data(gate_recipe)


def run(cfg: Config, s: Settings, out: str | Path, progress: bool = True) -> Report:
    from bench.generator import seed_categories
    from bench.judges import build_judge

    t0 = time.perf_counter()
    categories = seed_categories()
    plans = plan_folds(categories, s.folds)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    judge = build_judge(cfg, s.judge)
    recipes = load_recipes(s)
    now_instances = load_now(cfg, recipes["gate"])
    extra = extra_training(cfg)
    results = []
    for plan in tqdm(plans, desc="generalize: folds", unit="fold", disable=not progress):
        results.append(run_fold(plan, s, cfg, out, judge, recipes, now_instances, progress, extra))
    mean, worst = summarize(results, s.systems)
    report = Report(settings=s, config=cfg.source, categories=categories, folds=results, mean=mean,
                    worst_fd=worst, wall_s=round(time.perf_counter() - t0, 1),
                    folds_wall_s=round(sum(f.train_s + f.eval_s for f in results), 1),
                    date=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    write_report(report, out)
    return report


def render(report: Report) -> str:
    from bench.report import _table

    s = report.settings
    scheme = "leave one category out" if s.folds is None else f"{s.folds} folds of grouped categories"
    lines = ["# Cross-validation by category", "",
             f"{len(report.folds)} folds ({scheme}) over {', '.join(report.categories)}; "
             f"{s.n_train} training timelines per fold, {s.n_test} test timelines per held-out category; "
             f"config `{report.config}`, judge {s.judge or 'of the config'}.", "",
             f"> {report.test_data}.", "",
             f"Wall time: {report.wall_s:.0f} s this run; {report.folds_wall_s:.0f} s of training and "
             f"evaluation over all folds as recorded. {report.date}.", "",
             "## Mean over folds (percent)", ""]
    lines += _table(["system", *METRIC_KEYS, "worst-fold FD"],
                    [[sy, *(report.mean[sy].get(k) for k in METRIC_KEYS), report.worst_fd.get(sy)] for sy in s.systems])
    lines += ["", "## Per fold", ""]
    rows = []
    for f in report.folds:
        for sy in s.systems:
            fig = f.results.get(sy)
            rows.append([f.fold + 1, "+".join(f.held_out), sy, fig.instances if fig else None,
                         *((fig.metrics.get(k) for k in METRIC_KEYS) if fig else [None] * len(METRIC_KEYS))])
    lines += _table(["fold", "held out", "system", "n", *METRIC_KEYS], rows)
    for sy in s.systems:
        rows_m = [report.mean[sy].get(k) for k in METRIC_KEYS]
        lines.append("| mean | all | " + sy + " | – | " + " | ".join("–" if v is None else f"{v:.1f}" for v in rows_m) + " |")
    if TRIGGER_SYSTEM in s.systems and "promem" in s.systems:
        lines += ["", "## Context trigger", "",
                  "promem with memory.trigger on, on the same fold models; skip shares over the decision moments "
                  "and over the ordinary moments of the test timelines.", ""]
        lines += _table(["fold", "held out", "Set-F1 promem", "Set-F1 +trigger", "cost", "FD promem", "FD +trigger",
                         "skipped decisions", "skipped ordinary"], trigger_rows(report))
    errors = [(f.fold + 1, "+".join(f.held_out), what, msg) for f in report.folds for what, msg in f.errors.items()]
    if errors:
        lines += ["", "## Not run (a rerun tries again)", ""]
        lines += _table(["fold", "held out", "what", "error"], [[*e[:3], e[3].replace("|", "/")[:160]] for e in errors])
    lines += ["", "## Training per fold", ""]
    lines += _table(["fold", "held out", "train timelines", "train seeds", "test seeds", "models", "train s", "eval s"],
                    [[f.fold + 1, "+".join(f.held_out), f.n_train, len(f.train_seeds), len(f.test_seeds),
                      ", ".join(f.models) or "none", f.train_s, f.eval_s] for f in report.folds])
    return "\n".join(lines) + "\n"


def trigger_rows(report: Report) -> list[list]:
    """Per fold, then the mean: promem's Set-F1 and FD without and with the trigger, its cost in Set-F1
    points and the shares of moments it skipped."""
    rows = []
    for f in report.folds:
        off, on = f.results.get("promem"), f.results.get(TRIGGER_SYSTEM)
        if off is None or on is None:
            continue
        a, b = off.metrics.get("Set-F1"), on.metrics.get("Set-F1")
        rows.append([f.fold + 1, "+".join(f.held_out), a, b, None if a is None or b is None else round(a - b, 2),
                     off.metrics.get("FD"), on.metrics.get("FD"), on.extra_metrics.get("trigger_skip_share"),
                     on.extra_metrics.get("trigger_ordinary_skip_share")])
    if rows:
        mean = [round(sum(col) / len(col), 1) if all(v is not None for v in col) else None
                for col in zip(*(r[2:] for r in rows))]
        rows.append(["mean", "all", *mean])
    return rows


def write_report(report: Report, out: Path) -> tuple[Path, Path]:
    atomic_write_json(out / REPORT_JSON, report.model_dump(mode="json"))
    atomic_write_text(out / REPORT_MD, render(report))
    return out / REPORT_JSON, out / REPORT_MD
