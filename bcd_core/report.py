"""A session's report: one self-contained HTML page with plots, plus CSV and JSON records."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bcd_core.formatting import format_ms
from bcd_core.records.store import RecordStore
from bcd_core.reference import session_reference
from bcd_core.session_view import (
    SessionSnapshot,
    baseline_for,
    load_snapshot,
    session_status_text,
    strategy_text,
    task_best_curve,
)

TRIAL_COLUMNS = ("id", "task", "round", "elapsed_s", "latency_s", "error", "origin", "source_trial_id", "adaptation")
CURVES_IN_REPORT = 8  # the tasks that weigh most in the model latency


@dataclass
class ReportFiles:
    html: Path
    trials_csv: Path
    tasks_csv: Path
    json: Path


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode()


def _plots(store: RecordStore, snapshot: SessionSnapshot, reference_s: float | None = None) -> dict[str, str]:
    """The report's figures as base64 PNGs, by key."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return {
        "latency": _latency_plot(plt, store, snapshot, reference_s),
        "tasks": _task_curves_plot(plt, store, snapshot),
        "cost_model": _cost_model_plot(plt, snapshot),
    }


def _finished_png(plt: Any, figure: Any) -> str:
    """Lay the figure out, encode it, and close it."""
    figure.tight_layout()
    image = _png(figure)
    plt.close(figure)
    return image


def _latency_plot(plt: Any, store: RecordStore, snapshot: SessionSnapshot, reference_s: float | None = None) -> str:
    """The session's estimated model latency over time, beside stock MetaSchedule's if there is
    one, and onnxruntime's latency on this machine if it was timed."""
    figure, axis = plt.subplots(figsize=(8, 4), dpi=100)
    if snapshot.timeline:
        axis.step(
            [t / 60 for t, _ in snapshot.timeline],
            [v * 1e3 for _, v in snapshot.timeline],
            where="post",
            label=snapshot.session["strategy"],
            linewidth=2,
        )
    baseline = baseline_for(store, snapshot)
    if baseline is not None:
        axis.step(
            [t / 60 for t, _ in baseline.timeline],
            [v * 1e3 for _, v in baseline.timeline],
            where="post",
            label=f"stock MetaSchedule (session {baseline.session_id})",
            color="#7f7f7f",
        )
        if baseline.reached_at_s is not None:
            axis.axvline(baseline.reached_at_s / 60, linestyle="--", linewidth=1)
    if snapshot.measured:
        axis.scatter(
            [row["elapsed_s"] / 60 for row in snapshot.measured],
            [row["measured_latency_s"] * 1e3 for row in snapshot.measured],
            marker="D",
            label="compiled model, timed",
        )
    if reference_s is not None:
        axis.axhline(
            reference_s * 1e3, linestyle="-.", color="#d62728", label=f"onnxruntime {reference_s * 1e3:.3g} ms"
        )
    axis.set_xlabel("tuning time (min)")
    axis.set_ylabel("estimated model latency (ms)")
    axis.grid(True, alpha=0.3)
    axis.legend()
    return _finished_png(plt, figure)


def _task_curves_plot(plt: Any, store: RecordStore, snapshot: SessionSnapshot) -> str:
    """Best latency per trial of the CURVES_IN_REPORT tasks that weigh most."""
    figure, axis = plt.subplots(figsize=(8, 4), dpi=100)
    heaviest = sorted((t for t in snapshot.tasks if t.best_s is not None), key=lambda t: -(t.weight * (t.best_s or 0)))[
        :CURVES_IN_REPORT
    ]
    for task in heaviest:
        curve = task_best_curve(store, snapshot.session_id, task.row_id)
        axis.step([n for n, _ in curve], [v * 1e3 for _, v in curve], where="post", label=task.name)
    axis.set_yscale("log")
    axis.set_xlabel("trials of the task")
    axis.set_ylabel("best latency (ms)")
    axis.grid(True, which="both", alpha=0.3)
    if heaviest:
        axis.legend(fontsize=7)
    return _finished_png(plt, figure)


def _cost_model_plot(plt: Any, snapshot: SessionSnapshot) -> str:
    """The cost model's pairwise accuracy and Spearman correlation per round."""
    figure, axis = plt.subplots(figsize=(8, 3), dpi=100)
    rounds = [m["round"] for m in snapshot.metrics]
    axis.plot(rounds, [m["pairwise_accuracy"] for m in snapshot.metrics], ".-", label="pairwise accuracy")
    axis.plot(rounds, [m["spearman"] for m in snapshot.metrics], ".-", label="Spearman")
    axis.set_xlabel("round")
    axis.set_ylim(-1, 1)
    axis.grid(True, alpha=0.3)
    axis.legend()
    return _finished_png(plt, figure)


def _task_table(snapshot: SessionSnapshot) -> str:
    header = "".join(
        f"<th>{h}</th>"
        for h in (
            "cluster",
            "task",
            "weight",
            "trials",
            "failed",
            "best (ms)",
            "after diffusion (ms)",
            "origin",
            "status",
        )
    )
    rows = []
    for cluster in snapshot.clusters:
        for index in cluster.members:
            t = snapshot.task(index)
            role = " (representative)" if t.is_representative else ""
            cells = (
                cluster.position + 1,
                html.escape(t.name) + role,
                t.weight,
                t.trials,
                t.failed,
                format_ms(t.best_s, 4, ""),
                format_ms(t.diffused_best_s, 4, ""),
                t.best_origin or "",
                t.status,
            )
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def _reference_text(reference_s: float | None, estimate: float | None, measured: list[dict]) -> str:
    if reference_s is None:
        return "not timed (GPU target, or the model file is no longer where it was tuned)"
    text = f"{reference_s * 1e3:.4f} ms on this machine"
    tuned, how = (measured[-1]["measured_latency_s"], "timed") if measured else (estimate, "estimated")
    if tuned:
        ratio = tuned / reference_s
        words = f"{ratio:.2f}x slower" if ratio >= 1 else f"{1 / ratio:.2f}x faster"
        text += f"; the tuned model {how} {words}"
    return text


def _measured_text(measured: list[dict], estimate: float | None) -> str:
    """The compiled model's latency at the session's last milestone, beside the estimate then."""
    if not measured:
        return "not timed while tuning"
    last = measured[-1]
    seconds, then = last["measured_latency_s"], last["estimated_latency_s"]
    text = f"{seconds * 1e3:.4f} ms timed at {last['trials_done']} trials ({last['milestone']})"
    return text + f", {seconds / then:.2f}x the estimate then" if then else text


def _tuning_time_text(session: dict) -> str:
    budget = session.get("time_budget_s")
    of_budget = f" of a {budget / 60:.3g} min budget" if budget else ""
    return f"{(session['elapsed_s'] or 0) / 60:.1f} min{of_budget}"


def _html(snapshot: SessionSnapshot, images: dict[str, str], reference_s: float | None = None) -> str:
    s = snapshot.session
    estimate = snapshot.estimated_latency_s
    summary = [
        ("model", html.escape(s["model_name"])),
        ("strategy", html.escape(strategy_text(s))),
        ("target", html.escape(s["target"])),
        ("status", html.escape(session_status_text(s))),
        ("trials", f"{snapshot.trials_done} ({snapshot.failed_trials} failed)"),
        ("tuning time", _tuning_time_text(s)),
        ("estimated latency", "n/a" if estimate is None else f"{estimate * 1e3:.4f} ms"),
        ("compiled model", _measured_text(snapshot.measured, estimate)),
        ("onnxruntime", _reference_text(reference_s, estimate, snapshot.measured)),
        ("layout", html.escape(snapshot.layout.describe())),
        ("memory", "none" if snapshot.memory is None else html.escape(snapshot.memory.describe())),
        ("settings", html.escape(json.dumps(snapshot.settings))),
    ]
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in summary)
    figures = "".join(
        f'<h2>{title}</h2><img alt="{title}" src="data:image/png;base64,{images[key]}">'
        for key, title in (
            ("latency", "Estimated model latency"),
            ("tasks", "Best latency per task"),
            ("cost_model", "Cost model accuracy per round"),
        )
    )
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>bcd report: {html.escape(s["model_name"])} session {s["id"]}</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}
img{{max-width:100%}}</style></head><body>
<h1>{html.escape(s["model_name"])}: session {s["id"]}</h1><table>{rows}</table>{figures}
<h2>Tasks</h2>{_task_table(snapshot)}
<p>Records: <code>trials.csv</code>, <code>tasks.csv</code> and <code>report.json</code> beside this page.</p>
</body></html>"""


def write_report(
    store: RecordStore,
    session_id: int,
    out_dir: str | Path,
    progress: Callable[[int, int, str], None] = lambda step, total, text: None,
) -> ReportFiles:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    progress(0, 3, "reading the session")
    snapshot = load_snapshot(store, session_id)
    reference_s = session_reference(store, snapshot.session)
    names = {t.row_id: t.name for t in snapshot.tasks}
    files = ReportFiles(out / "report.html", out / "trials.csv", out / "tasks.csv", out / "report.json")
    with open(files.trials_csv, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TRIAL_COLUMNS)
        for row in store.trials(session_id):
            writer.writerow([names.get(row["task_id"], "") if c == "task" else row[c] for c in TRIAL_COLUMNS])
    task_rows = [asdict(t) for t in snapshot.tasks]
    with open(files.tasks_csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(task_rows[0]) if task_rows else ["index"])
        writer.writeheader()
        writer.writerows(task_rows)
    files.json.write_text(
        json.dumps(
            {
                "session": snapshot.session,
                "estimated_latency_s": snapshot.estimated_latency_s,
                "onnxruntime_latency_s": reference_s,
                "compiled_model_latency": snapshot.measured,
                "layout": asdict(snapshot.layout),
                "memory": asdict(snapshot.memory) if snapshot.memory else None,
                "tasks": task_rows,
                "clusters": [asdict(c) for c in snapshot.clusters],
                "timeline": snapshot.timeline,
                "cost_model_metrics": snapshot.metrics,
                "events": store.events(session_id),
            },
            indent=1,
        )
    )
    progress(1, 3, "drawing the plots")
    images = _plots(store, snapshot, reference_s)
    progress(2, 3, "writing the page")
    files.html.write_text(_html(snapshot, images, reference_s))
    progress(3, 3, f"report written to {out}")
    return files
