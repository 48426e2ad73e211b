"""CPMBench metrics (docs/formats.md section 5), all in percent, null when there is nothing to count.

Counting units, where the spec leaves room:
- TP/FN are counted per gold intention of positive instances.
- FP/TN are counted per instance on the variants that should stay silent: one response at a
  moment that needed silence is one false alarm however many intentions the timeline holds.
  A state_change instance is FP when any of its intentions is judged FP (a stale push).
- Set-F1 is 0 when there is no TP but at least one FN or FP, though P or R is then undefined.
- DIR skips intentions formed at the decision event itself (imported CAB contexts): the
  current event is always in front of the reasoner, so there is nothing to retrieve.

`judged` per instance maps intention id -> TP/FN/FP/TN; an instance without intentions
(no_formation) uses the key NO_INTENTION. `judged=None` means a retrieval-only run: only DIR
and SCR are computed.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from core.formats import CATEGORIES, METRIC_KEYS, VARIANTS, Decision, Event, Instance

NO_INTENTION = "*"
LABELS = ("TP", "FN", "FP", "TN")
SILENT_VARIANTS = ("negative", "no_formation", "state_change")


class OrdinaryTally(NamedTuple):
    moments: int  # ordinary events of one timeline before its decision moment
    skipped: int  # of those, how many the context trigger skips


def ordinary_events(instance: Instance, past: Sequence[Event]) -> list[Event]:
    """A timeline's routine moments: the events before the decision that neither form an intention,
    change its state nor are the decision moment (the generator's distractors and confusers). In live
    use every event is a decision moment; these are the ones where speaking is never called for."""
    special = {instance.decision_event} | {x for it in instance.intentions for x in (it.formation, it.state_change) if x}
    return [e for e in past if e.id not in special]


def _get(decision: Decision | Mapping[str, Any], key: str, default: Any = None) -> Any:
    if isinstance(decision, Mapping):
        return decision.get(key, default)
    value = getattr(decision, key, None)
    return default if value is None else value


def _pct(num: float, den: float) -> float | None:
    return None if den == 0 else round(100.0 * num / den, 2)


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else round(2 * p * r / (p + r), 2)


def outcome(instance: Instance, decision: Decision | Mapping[str, Any], judged: Mapping[str, str]) -> dict[str, int]:
    """Counts one instance contributes: tp, fn (positive intentions), fp, tn (silent instances),
    and whether its decision is right for Acc-P and Acc-PA."""
    for label in judged.values():
        if label not in LABELS:
            raise ValueError(f"instance {instance.id!r}: judged label {label!r} is not one of {', '.join(LABELS)}")
    if instance.variant == "positive":
        tp = sum(1 for it in instance.intentions if judged.get(it.id) == "TP")
        fn = len(instance.intentions) - tp
        assist = bool(_get(decision, "assist", False))
        return {"tp": tp, "fn": fn, "fp": 0, "tn": 0, "acc_p": int(assist), "acc_pa": int(assist and fn == 0)}
    if judged:
        fp = int(any(label == "FP" for label in judged.values()))
    else:  # nothing judged: silence is right, any response is a false alarm
        fp = int(bool(_get(decision, "assist", False)))
    return {"tp": 0, "fn": 0, "fp": fp, "tn": 1 - fp, "acc_p": 1 - fp, "acc_pa": 1 - fp}


def retrieval_counts(instance: Instance, decision: Decision | Mapping[str, Any]) -> dict[str, int]:
    """dir_hit/dir_n over positive intentions; scr_hit/scr_n over state_change instances."""
    retrieved = set(_get(decision, "retrieved", []) or [])
    out = {"dir_hit": 0, "dir_n": 0, "scr_hit": 0, "scr_n": 0}
    if instance.variant == "positive":
        for it in instance.intentions:
            if it.formation == instance.decision_event:
                continue
            out["dir_n"] += 1
            out["dir_hit"] += int(it.formation in retrieved)
    elif instance.variant == "state_change":
        out["scr_n"] = 1
        out["scr_hit"] = int(all(it.formation in retrieved and it.state_change in retrieved
                                 for it in instance.intentions))
    return out


def _metrics(rows: Sequence[tuple[Instance, Any, Mapping[str, str] | None]], decisions_judged: bool) -> dict[str, Any]:
    c = {k: 0 for k in ("dir_hit", "dir_n", "scr_hit", "scr_n", "tp", "fn", "fp", "tn", "acc_p", "acc_pa")}
    n_pos = n_silent = acc_pos = acc_silent = 0
    for inst, dec, jd in rows:
        for k, v in retrieval_counts(inst, dec).items():
            c[k] += v
        if not decisions_judged:
            continue
        o = outcome(inst, dec, jd or {})
        for k, v in o.items():
            c[k] += v
        if inst.variant == "positive":
            n_pos += 1
            acc_pos += o["acc_p"]
        else:
            n_silent += 1
            acc_silent += o["acc_p"]
    m: dict[str, Any] = {k: None for k in METRIC_KEYS}
    m["DIR"] = _pct(c["dir_hit"], c["dir_n"])
    m["SCR"] = _pct(c["scr_hit"], c["scr_n"])
    counts = {"n": len(rows)}
    if decisions_judged:
        n = len(rows)
        m["FD"] = _pct(c["fp"], c["fp"] + c["tn"])
        m["Acc-P"] = _pct(c["acc_p"], n)
        m["Set-P"] = _pct(c["tp"], c["tp"] + c["fp"])
        m["Set-R"] = _pct(c["tp"], c["tp"] + c["fn"])
        # No TP but something to count (a miss or a false alarm): F1 is 0, not undefined, so a
        # system that never speaks scores 0 rather than dropping out of the comparison.
        m["Set-F1"] = 0.0 if (c["tp"] == 0 and c["fn"] + c["fp"] > 0) else _f1(m["Set-P"], m["Set-R"])
        m["Acc-PA"] = _pct(c["acc_pa"], n)
        counts.update({"TP": c["tp"], "FN": c["fn"], "FP": c["fp"], "TN": c["tn"],
                       "Demand-Acc": _pct(acc_pos, n_pos), "No-Demand-Acc": _pct(acc_silent, n_silent),
                       # ContextAgent's missed / false detection: shares of ALL instances, so that
                       # Acc-P + MD-all + FD-all = 100 (as CAB results are published).
                       "MD-all": _pct(n_pos - acc_pos, n), "FD-all": _pct(n_silent - acc_silent, n)})
    return {"metrics": m, "counts": counts}


def _cost(decisions: Iterable[Any]) -> dict[str, Any]:
    decisions = list(decisions)
    llm = [bool(_get(d, "llm_called", False)) for d in decisions]
    toks = [t for t in (_get(d, "context_tokens") for d in decisions) if isinstance(t, (int, float))]
    return {
        # Reasoners answer silence with an "error" key when their model fails: count them, since
        # such silences score as decisions.
        "reasoner_errors": sum(1 for d in decisions if _get(d, "error")),
        "LLM-call-share": _pct(sum(llm), len(llm)),
        "context_tokens_mean": round(sum(toks) / len(toks), 1) if toks else None,
        "context_tokens_total": int(sum(toks)) if toks else None,
        # moments the context trigger (memory.trigger.enabled) answered with silence, skipping memory and reasoner
        "trigger_skip_share": _pct(sum(1 for d in decisions if _get(d, "trigger")), len(decisions)),
        # the same at every ordinary event of the timelines (ordinary_events), with the memory as it stood
        # there; null when the trigger was off
        "trigger_ordinary_skip_share": _pct(sum(_get(d, "ordinary_skipped", 0) for d in decisions),
                                            sum(_get(d, "ordinary_moments", 0) for d in decisions)),
    }


def field_value(instance: Instance, path: str) -> Any:
    """A dotted key of an instance, extra keys included ("source.relation_type"); None when absent."""
    node: Any = instance.dump()
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def compute_metrics(instances: Sequence[Instance], decisions: Sequence[Decision | Mapping[str, Any]],
                    judged: Sequence[Mapping[str, str]] | None, group_by: Sequence[str] = ()) -> dict[str, Any]:
    """Metrics of aligned lists (one decision and one judged dict per instance).

    Returns {"metrics": the 8 METRIC_KEYS, "extra": counts, Demand/No-Demand accuracy,
    LLM-call share and context tokens, "breakdown": {"variant": {...}, "category": {...}}}
    where each breakdown entry holds the 8 metrics plus "n". `group_by` adds breakdowns by other
    (dotted) instance keys, e.g. "source.relation_type" of imported LoCoMo-Plus instances.
    """
    if len(instances) != len(decisions) or (judged is not None and len(judged) != len(instances)):
        raise ValueError("compute_metrics: instances, decisions and judged must be aligned lists of equal length")
    full = judged is not None
    rows = list(zip(instances, decisions, judged if full else [None] * len(instances)))
    overall = _metrics(rows, full)
    extra = {**overall["counts"], **_cost(decisions)}
    if not full:  # no reasoner ran: whether it would call a large model is unknown
        extra["LLM-call-share"] = None
    breakdown: dict[str, dict[str, Any]] = {"variant": {}, "category": {}}
    for field, values in (("variant", VARIANTS), ("category", CATEGORIES)):
        for value in values:
            sub = [r for r in rows if getattr(r[0], field) == value]
            if sub:
                part = _metrics(sub, full)
                breakdown[field][value] = {**part["metrics"], "n": len(sub)}
    for path in group_by:
        values_of = [field_value(r[0], path) for r in rows]
        groups = sorted({str(v) for v in values_of if v is not None})
        breakdown[path] = {}
        for value in groups:
            sub = [r for r, v in zip(rows, values_of) if v is not None and str(v) == value]
            breakdown[path][value] = {**_metrics(sub, full)["metrics"], "n": len(sub)}
    return {"metrics": overall["metrics"], "extra": extra, "breakdown": breakdown}
