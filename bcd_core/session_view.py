"""Read-only views of a stored session for dashboards and reports.

Everything a viewer shows (the cluster tree, latency curves, cost-model accuracy,
provenance, the stock baseline to compare with) is computed here from the store with a few
aggregate queries, so any front end (the Qt dashboard, the HTML report, scripts) reads the
same numbers, and a 100 000-trial store still loads fast.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bcd_core.errors import StoreError
from bcd_core.formatting import counted
from bcd_core.records.measured import LayoutChoice, session_layout_choice
from bcd_core.records.states import BUSY_TASK_STATES, REMEMBERED_ORIGINS, SessionStatus, TaskStatus, TrialOrigin
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import session_layout
from bcd_core.tuning.options import STOCK

# The states a task goes through, in the order a user sees them.
TASK_STATES = tuple(TaskStatus)


@dataclass
class TaskView:
    index: int
    row_id: int
    name: str
    weight: int
    flops: float
    shapes: list[list[int]]
    operator_key: str
    sketch_key: str
    cluster_position: int
    cluster_key: str
    is_representative: bool
    cap: int | None  # a per-task trial cap the user set; None: the task shares the session's budget
    status: str
    trials: int = 0
    failed: int = 0
    best_s: float | None = None
    best_origin: str | None = None
    diffused_best_s: float | None = None
    diffused_from_trial_id: int | None = None
    fallback: bool = False

    @property
    def shapes_text(self) -> str:
        return " ".join("x".join(str(d) for d in shape) for shape in self.shapes)


@dataclass
class ClusterView:
    key: str
    position: int
    representative: int | None  # task index; None for a singleton
    members: list[int]  # task indices, representative first

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass
class MemoryUse:
    """What a session drew on from earlier tunes (bcd_core/memory)."""

    sessions: list[str]  # "model (session N)", with the store when it is not this one
    tasks_seeded: int  # tasks that measured at least one remembered program
    tasks_best: int  # tasks whose best program is a remembered one
    models: list[str] = field(default_factory=list)  # the earlier tunes' models, once each

    def summary(self) -> str:
        """One short line (the dashboard's Memory row; `describe` is its tooltip)."""
        seeded = counted(self.tasks_seeded, "task")
        return f"{seeded} seeded, {self.tasks_best} kept as best; from {', '.join(self.models)}"

    def describe(self) -> str:
        return (
            f"{counted(self.tasks_seeded, 'task')} seeded from {counted(len(self.sessions), 'earlier tune')} "
            f"({', '.join(self.sessions)}); {self.tasks_best} kept a remembered program as best"
        )


def memory_use(store: RecordStore, session_id: int, tasks: Sequence[TaskView]) -> MemoryUse | None:
    rows = store.memory_used(session_id)
    if not rows:
        return None
    sessions = [
        f"{row['model_name']} (session {row['source_session_id']}{', ' + row['store'] if row['store'] else ''})"
        for row in rows
    ]
    seeded = store.tasks_with_valid_trials_of(session_id, REMEMBERED_ORIGINS)
    best = sum(1 for task in tasks if task.best_origin in REMEMBERED_ORIGINS)
    models = list(dict.fromkeys(str(row["model_name"]).removesuffix(".onnx") for row in rows))
    return MemoryUse(sessions, int(seeded), best, models)


@dataclass
class SessionSnapshot:
    session: dict[str, Any]
    tasks: list[TaskView]
    clusters: list[ClusterView]
    timeline: list[tuple[float, float]]  # (elapsed s, estimated model latency s), defined points only
    metrics: list[dict[str, Any]]  # per round: pairwise_accuracy, spearman, topk_recall
    failed_trials: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    memory: MemoryUse | None = None  # None: the session drew on no earlier tune
    layout: LayoutChoice | None = None  # the convolutions' layout, and why
    measured: list[dict[str, Any]] = field(default_factory=list)  # the compiled model timed at milestones
    _by_index: dict[int, TaskView] | None = field(default=None, repr=False, compare=False)

    @property
    def session_id(self) -> int:
        return int(self.session["id"])

    @property
    def trials_done(self) -> int:
        return sum(task.trials for task in self.tasks)

    @property
    def trials_total(self) -> int:
        """The session's budget: trials per task x tasks, shared by the scheduler (not a per-task cap),
        or the total the user set while it ran."""
        if self.session.get("total_budget"):
            return int(self.session["total_budget"])
        per_task = int(self.settings.get("trials_per_task") or 0)
        return per_task * len(self.tasks) if per_task else self.trials_done

    @property
    def estimated_latency_s(self) -> float | None:
        if any(task.best_s is None for task in self.tasks):
            return None
        return sum(task.weight * (task.best_s or 0.0) for task in self.tasks)

    def task(self, index: int) -> TaskView:
        """The task with this engine index (not a position in `tasks`)."""
        if self._by_index is None or len(self._by_index) != len(self.tasks):
            self._by_index = {t.index: t for t in self.tasks}
        return self._by_index[index]


def first_time_at_or_below(timeline: Sequence[tuple[float, float]], level: float) -> float | None:
    for elapsed, estimate in timeline:
        if estimate <= level * (1 + 1e-9):
            return elapsed
    return None


def session_status_text(session: dict[str, Any]) -> str:
    """A session's status with why its last run ended, where that says more than the status."""
    status, reason = str(session.get("status") or ""), str(session.get("stop_reason") or "")
    if status == SessionStatus.RUNNING or not reason or status == SessionStatus.COMPLETED:
        return status
    return reason if reason.startswith(status) else f"{status}: {reason}"


def continues_its_probe(session: dict[str, Any]) -> bool:
    """Whether the session is a tune about to go on from its layout probe: it began as the
    probe (records/sessions.py, `continue_as_tune`) and has no trials of its own yet."""
    probe_trials = session.get("probe_trials")
    return probe_trials is not None and int(session.get("trials_done") or 0) == int(probe_trials)


def is_layout_probe(session: dict[str, Any]) -> bool:
    """A probe that lost (or was stopped) still says so in its settings (tuning/layout_choice.py)."""
    return bool(json.loads(session.get("settings") or "{}").get("layout_probe"))


def default_session(sessions: Sequence[dict[str, Any]], running: Sequence[int] = ()) -> dict[str, Any] | None:
    """The session a reader shows, exports or reports when none is named: the newest an engine
    tunes now (ids in `running`), else the newest that is not a layout probe, else the newest.
    A first tune's losing probe is stored after the tune that went on from the winning one, so
    "the newest" alone would be the model the tune measured and dropped."""
    live = [s for s in sessions if s["id"] in running]
    tunes = [s for s in sessions if not is_layout_probe(s)]
    chosen = live or tunes or list(sessions)
    return chosen[-1] if chosen else None


def strategy_text(session: dict[str, Any]) -> str:
    """The session's strategy, and its part in choosing the layout where it had one: a probe
    says so in its settings; a tune that went on from its probe keeps the probe's trial count."""
    strategy = str(session.get("strategy") or "")
    layout = session_layout({"settings": session.get("settings")})
    if is_layout_probe(session):
        return f"{strategy}, {layout} layout probe"
    if session.get("probe_trials") is not None:
        return f"{strategy}, went on from its {layout} probe"
    return strategy


def eta_by_clock(
    trials_eta_s: float | None, elapsed_s: float, time_budget_s: float | None, offset_s: float = 0.0
) -> float | None:
    """Time left: what the trials left take at the pace so far, or what the time budget leaves
    if that is sooner (tuning/stopping.py stops the tune there). The budget counts the session's
    clock plus `offset_s` (tuning/run.py, `budget_offset_s`)."""
    if not time_budget_s:
        return trials_eta_s
    left = max(time_budget_s - elapsed_s - offset_s, 0.0)
    return left if trials_eta_s is None else min(trials_eta_s, left)


def session_timeline(store: RecordStore, session_id: int) -> list[tuple[float, float]]:
    """(elapsed s, estimated model latency s) after each round, where the estimate is defined."""
    return [
        (float(row["elapsed_s"]), float(row["estimated_latency_s"]))
        for row in store.timeline(session_id)
        if row["estimated_latency_s"] is not None
    ]


def session_trial_timeline(store: RecordStore, session_id: int) -> list[tuple[int, float]]:
    """(trials measured, estimated model latency s) after each round, where defined."""
    return [
        (int(row["trials_done"]), float(row["estimated_latency_s"]))
        for row in store.timeline(session_id)
        if row["estimated_latency_s"] is not None and row["trials_done"] is not None
    ]


def _display_status(row: dict[str, Any], trials: int, cap: int | None, session_status: str) -> str:
    raw = row["status"] or TaskStatus.QUEUED
    status = TaskStatus(raw) if raw in TASK_STATES else raw  # a status this version does not know: as stored
    if status in (TaskStatus.SKIPPED, TaskStatus.FALLBACK):
        return status
    if (cap is not None and trials >= cap) or (session_status == SessionStatus.COMPLETED and trials > 0):
        return TaskStatus.DONE
    if status in BUSY_TASK_STATES and session_status != SessionStatus.RUNNING:
        return TaskStatus.STOPPED  # nothing tunes it now: "tuning" would say otherwise
    return status


def _task_view(
    row: dict[str, Any],
    counts: tuple[int, int],
    best: tuple[float | None, str | None],
    default_budget: int | None,
    session_status: str,
) -> TaskView:
    """A stored task row with its trial counts and best trial. Its cap is its budget where that
    differs from the session's trials per task."""
    total, failed = counts
    latency, origin = best
    cap = row["budget"] if row["budget"] is not None and row["budget"] != default_budget else None
    return TaskView(
        index=row["idx"],
        row_id=row["id"],
        name=row["name"],
        weight=int(row["weight"]),
        flops=float(row["flops"] or 0.0),
        shapes=json.loads(row["shapes"]) if isinstance(row["shapes"], str) else (row["shapes"] or []),
        operator_key=row["operator_key"] or "",
        sketch_key=row["sketch_key"] or "",
        cluster_position=int(row["cluster_id"] or 0),
        cluster_key=row["cluster_key"] or row["name"],
        is_representative=bool(row["is_representative"]),
        cap=cap,
        status=_display_status(row, total, cap, session_status),
        trials=int(total),
        failed=int(failed or 0),
        best_s=latency,
        best_origin=origin,
        diffused_best_s=row["diffused_best_s"],
        diffused_from_trial_id=row["diffused_from_trial_id"],
        fallback=bool(row["fallback"]),
    )


def load_snapshot(store: RecordStore, session_id: int) -> SessionSnapshot:
    session = store.session(session_id)
    counts = store.trial_and_failure_counts(session_id)
    best = store.best_trials(session_id)
    settings = json.loads(session["settings"] or "{}")
    default_budget = settings.get("trials_per_task")
    tasks = [
        _task_view(
            row, counts.get(row["id"], (0, 0)), best.get(row["id"], (None, None)), default_budget, session["status"]
        )
        for row in store.tasks(session_id)
    ]
    timeline = session_timeline(store, session_id)
    return SessionSnapshot(
        session=session,
        tasks=tasks,
        clusters=clusters_of(tasks),
        timeline=timeline,
        metrics=store.cost_model_metrics(session_id),
        failed_trials=sum(task.failed for task in tasks),
        settings=settings,
        memory=memory_use(store, session_id, tasks),
        layout=session_layout_choice(store, session),
        measured=store.model_latencies(session_id),
    )


def estimate_with_untuned(snapshot: SessionSnapshot, untuned: dict[int, float]) -> tuple[float | None, list[str]]:
    """The model's estimate, and the tasks in it at their untuned latency: a task skipped
    before it was measured is compiled untuned on export, so it counts as such here; None
    while a task that is not skipped has no measurement (or its untuned time is unknown)."""
    if snapshot.estimated_latency_s is not None:
        return snapshot.estimated_latency_s, []
    unmeasured = [t for t in snapshot.tasks if t.best_s is None]
    if any(t.status != TaskStatus.SKIPPED or t.index not in untuned for t in unmeasured):
        return None, []
    total = sum(t.weight * (t.best_s if t.best_s is not None else untuned[t.index]) for t in snapshot.tasks)
    return total, [t.name for t in unmeasured]


def untuned_of(snapshot: SessionSnapshot, by_name: dict[str, float]) -> dict[int, float]:
    """Untuned latencies by the snapshot's task index, from latencies by task name. A model
    prepared in one layout and a session tuned in another number their tasks differently; a
    task whose name the timed model lacks has no untuned latency, and so no speedup."""
    return {t.index: by_name[t.name] for t in snapshot.tasks if t.name in by_name}


def clusters_of(tasks: list[TaskView]) -> list[ClusterView]:
    """Clusters in the engine's current priority order, representative first."""
    grouped: dict[str, list[TaskView]] = {}
    for task in sorted(tasks, key=lambda t: (t.cluster_position, t.index)):
        grouped.setdefault(task.cluster_key, []).append(task)
    clusters = []
    for position, (key, members) in enumerate(grouped.items()):
        representative = next((t.index for t in members if t.is_representative), None)
        ordered = sorted(members, key=lambda t: (t.index != representative, t.index))
        clusters.append(ClusterView(key, position, representative, [t.index for t in ordered]))
    return clusters


def cluster_titles(snapshot: SessionSnapshot) -> dict[str, str]:
    """A name per cluster key for people: the operator chain of its first task, numbered where
    several clusters share one (a 1x1 and a 3x3 convolution both read conv2d_add_relu)."""
    chains = {c.key: snapshot.task(c.members[0]).operator_key for c in snapshot.clusters if c.members}
    totals: dict[str, int] = {}
    for chain in chains.values():
        totals[chain] = totals.get(chain, 0) + 1
    seen: dict[str, int] = {}
    titles = {}
    for key, chain in chains.items():
        if totals[chain] == 1:
            titles[key] = chain
            continue
        seen[chain] = seen.get(chain, 0) + 1
        titles[key] = f"{chain} ({seen[chain]} of {totals[chain]})"
    return titles


def task_best_curve(store: RecordStore, session_id: int, task_row_id: int) -> list[tuple[int, float]]:
    """(trial number within the task, best latency so far): the corners of the best-so-far
    curve only, i.e. each trial that improved the best, the trial just before the next
    improvement, and the task's last trial. Joined by lines (or drawn as steps) they give the
    same picture as one point per valid trial, with hundreds of points instead of thousands."""
    latencies = store.task_latencies(session_id, task_row_id)
    curve: list[tuple[int, float]] = []
    best = float("inf")
    for number, latency in enumerate(latencies, start=1):
        if latency is None or latency >= best:
            continue
        if curve and curve[-1][0] != number - 1:
            curve.append((number - 1, best))  # the flat stretch ends here
        best = latency
        curve.append((number, best))
    if curve and curve[-1][0] != len(latencies):
        curve.append((len(latencies), best))
    return curve


def latest_round_predictions(store: RecordStore, session_id: int) -> list[tuple[float, float]]:
    """(predicted score, measured throughput 1/s) for the latest round the cost model scored."""
    return [(score, 1.0 / latency) for score, latency in store.latest_scored_round(session_id) if latency]


@dataclass
class Provenance:
    task: TaskView
    representative: str | None  # name of the task whose program seeded this one
    source_trial_id: int | None
    source_latency_s: float | None
    adaptation: str | None
    diffused_best_s: float | None
    best_s: float | None
    trials: int
    diffused_trials: int
    origin: str | None = None  # of the program that seeded it: "diffused", "memory" or "reused"
    memory_trials: int = 0  # remembered programs measured for it
    remembered: str | None = None  # how its fastest remembered program was adapted, and from where


def provenance_of(store: RecordStore, snapshot: SessionSnapshot, task_index: int) -> Provenance:
    """Where the task's best program from another task came from: the fastest of its
    diffused, remembered or reused trials, its source and how it was adapted."""
    task = snapshot.task(task_index)
    sid = snapshot.session_id
    counts = store.carried_trial_counts(sid, task.row_id)
    seeding = store.fastest_carried_trial(sid, task.row_id) or {}
    origin, source_id, adaptation = seeding.get("origin"), seeding.get("source_trial_id"), seeding.get("adaptation")
    remembered = store.fastest_remembered_trial(sid, task.row_id)
    representative = source_latency = None
    if source_id is not None:  # a trial of this store (another task's, or an earlier tune's)
        found = store.trial_source(source_id)
        if found:
            representative, source_latency = found
    return Provenance(
        task=task,
        representative=representative,
        source_trial_id=source_id,
        source_latency_s=source_latency,
        adaptation=adaptation,
        diffused_best_s=task.diffused_best_s,
        best_s=task.best_s,
        trials=task.trials,
        diffused_trials=counts.get(TrialOrigin.DIFFUSED, 0),
        origin=origin,
        memory_trials=sum(counts.get(origin, 0) for origin in REMEMBERED_ORIGINS),
        remembered=remembered["adaptation"] if remembered else None,
    )


@dataclass
class Baseline:
    session_id: int
    timeline: list[tuple[float, float]]
    final_latency_s: float
    reached_at_s: float | None  # when the compared session first matched the baseline's final


def _stock_sessions(store: RecordStore, model_hash: str, target: str) -> list[dict[str, Any]]:
    return [
        s
        for s in store.sessions()
        if s["strategy"] == STOCK
        and s["model_hash"] == model_hash
        and s["target_key"] == target
        and s["estimated_latency_s"] is not None
    ]


def baseline_for(store: RecordStore, snapshot: SessionSnapshot, look_beside: bool = True) -> Baseline | None:
    """The newest stock-MetaSchedule session of the same model and target: in this store, or
    (with `look_beside`) in another store in the same folder, as `bcd bench` writes them."""
    session = snapshot.session
    if session["strategy"] == STOCK:
        return None
    found: tuple[RecordStore, dict[str, Any]] | None = None
    candidates = _stock_sessions(store, session["model_hash"], session["target_key"])
    if candidates:
        found = (store, candidates[-1])
    elif look_beside:
        for path in sorted(store.path.parent.glob("*.db")):
            if path.resolve() == store.path.resolve():
                continue
            try:
                other = RecordStore(path, create=False)
            except StoreError:
                continue  # not a records database: not ours to read
            candidates = _stock_sessions(other, session["model_hash"], session["target_key"])
            if candidates:
                found = (other, candidates[-1])
                break
            other.close()
    if found is None:
        return None
    source, chosen = found
    timeline = session_timeline(source, chosen["id"])
    if source is not store:
        source.close()
    if not timeline:
        return None
    final = min(latency for _, latency in timeline)
    return Baseline(chosen["id"], timeline, final, first_time_at_or_below(snapshot.timeline, final))


def preview_snapshot(
    model_name: str, strategy: str, tasks: Sequence[Any], clusters: Sequence[Any], trials_per_task: int
) -> SessionSnapshot:
    """What a model looks like before any session: its tasks and clusters, all queued.
    `tasks` and `clusters` are the engine's Task and Cluster objects (prepare_model)."""
    position_of = {}
    representative_of = {}
    for position, cluster in enumerate(clusters):
        for index in cluster.members:
            position_of[index] = (position, cluster.key)
        if cluster.size > 1:
            representative_of[cluster.key] = cluster.representative
    views = [
        TaskView(
            index=t.index,
            row_id=-1,
            name=t.name,
            weight=t.weight,
            flops=t.flops,
            shapes=t.shapes,
            operator_key=t.operator_key,
            sketch_key=t.sketch_key,
            cluster_position=position_of[t.index][0],
            cluster_key=position_of[t.index][1],
            is_representative=representative_of.get(position_of[t.index][1]) == t.index,
            cap=None,
            status=TaskStatus.QUEUED,
        )
        for t in tasks
    ]
    session = {
        "id": 0,
        "model_name": model_name,
        "strategy": strategy,
        "status": "not tuned",
        "elapsed_s": 0.0,
        "target": "",
        "settings": "{}",
    }
    return SessionSnapshot(
        session=session,
        tasks=views,
        clusters=clusters_of(views),
        timeline=[],
        metrics=[],
        settings={"trials_per_task": trials_per_task},
    )
