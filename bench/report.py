"""Markdown report comparing systems' RESULT objects, with a PNG plot beside it."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from core.formats import CATEGORIES, METRIC_KEYS, VARIANTS
from core.jsonio import atomic_write_text

EXTRA_COLUMNS = ("Demand-Acc", "No-Demand-Acc", "MD-all", "FD-all", "LLM-call-share", "context_tokens_mean")


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines


def _breakdown_table(results: Sequence[dict], field: str, values: Sequence[str]) -> list[str]:
    rows = []
    for value in values:
        for r in results:
            part = r.get("breakdown", {}).get(field, {}).get(value)
            if part:
                rows.append([value, r["system"], part.get("n")] + [part.get(k) for k in METRIC_KEYS])
    return _table([field, "system", "n", *METRIC_KEYS], rows) if rows else [f"(no {field} breakdown)"]


def plot(results: Sequence[dict], png: Path) -> None:
    """Left: the 8 metrics per system; right: per variant, Acc-P (or DIR/SCR in retrieval-only runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = [r["system"] for r in results]
    retrieval_only = all(r.get("retrieval_only") for r in results)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.8 / max(1, len(results))

    def bars(ax, labels, values_of, title):
        for i, r in enumerate(results):
            vals = [values_of(r, lab) for lab in labels]
            xs = [j + i * width for j in range(len(labels))]
            ax.bar(xs, [0 if v is None else v for v in vals], width, label=r["system"])
            for x, v in zip(xs, vals):
                if v is None:  # nothing to count: say so rather than draw a zero
                    ax.text(x, 1, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
        ax.set_xticks([j + width * (len(results) - 1) / 2 for j in range(len(labels))])
        ax.set_xticklabels(labels, rotation=20)
        ax.set_ylim(0, 105)
        ax.set_ylabel("%")
        ax.set_title(title)

    shown = [k for k in METRIC_KEYS if any(r["metrics"].get(k) is not None for r in results)] or list(METRIC_KEYS)
    bars(axes[0], shown, lambda r, k: r["metrics"].get(k), "Metrics per system")
    metric = "DIR" if retrieval_only else "Acc-P"
    def per_variant(r, v):
        part = r.get("breakdown", {}).get("variant", {}).get(v) or {}
        return part.get("SCR" if (retrieval_only and v == "state_change") else metric)

    variants = [v for v in VARIANTS if any(per_variant(r, v) is not None for r in results)] or list(VARIANTS)

    title = "DIR (positive) / SCR (state_change) per variant" if retrieval_only else "Acc-P per variant"
    bars(axes[1], variants, per_variant, title)
    axes[0].legend(fontsize=8, title="system")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def render(results: Sequence[dict], png_name: str | None) -> str:
    first = results[0]
    lines = ["# CPMBench report", "",
             f"Data: `{first.get('data')}`; config: `{first.get('config')}`; "
             f"judge: {first.get('judge') or 'none (retrieval only)'}; "
             f"k = {first.get('run', {}).get('k')}.", ""]
    notes = {r.get("note") for r in results if r.get("note")}
    lines += [f"> {n}" for n in sorted(notes)] + ([""] if notes else [])
    lines += ["## Metrics per system (percent)", ""]
    lines += _table(["system", "n", *METRIC_KEYS, *EXTRA_COLUMNS],
                    [[r["system"], r.get("extra_metrics", {}).get("n")] + [r["metrics"].get(k) for k in METRIC_KEYS]
                     + [r.get("extra_metrics", {}).get(k) for k in EXTRA_COLUMNS] for r in results])
    lines += ["", "Demand-Acc / No-Demand-Acc: accuracy on instances that need help / silence. "
              "MD-all / FD-all: missed / false detections as shares of all instances (ContextAgent's CAB figures). "
              "LLM-call-share: percent of decision moments that called a large model. "
              "context_tokens_mean: tokens of context given to the reasoner per decision.", ""]
    failed = [(r["system"], iid, msg) for r in results for iid, msg in (r.get("errors") or {}).items()]
    if failed:
        lines += ["## Failed instances (left out of the metrics)", ""]
        lines += _table(["system", "instance", "error"], [[s, i, m.replace("|", "/")[:160]] for s, i, m in failed])
        lines.append("")
    lines += ["## Per variant", ""] + _breakdown_table(results, "variant", VARIANTS)
    lines += ["", "## Per category", ""] + _breakdown_table(results, "category", CATEGORIES)
    extra_fields = [f for f in dict.fromkeys(k for r in results for k in r.get("breakdown", {}))
                    if f not in ("variant", "category")]
    for f in extra_fields:
        values = sorted({v for r in results for v in r["breakdown"].get(f, {})})
        lines += ["", f"## Per {f}", ""] + _breakdown_table(results, f, values)
    if png_name:
        lines += ["", "## Plot", "", f"![metrics per system and variant]({png_name})"]
    return "\n".join(lines) + "\n"


def write_report(results: Sequence[dict], md_path: str | Path) -> tuple[Path, Path]:
    """Write REPORT.md and REPORT.png (same stem); returns both paths."""
    md_path = Path(md_path)
    png = md_path.with_suffix(".png")
    plot(results, png)
    atomic_write_text(md_path, render(results, png.name))
    return md_path, png
