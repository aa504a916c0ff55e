"""A tuning session: model -> tasks -> store session -> strategy -> records, with resume.

The store is the source of truth. A session is identified by model hash, target, strategy
and settings; running the same command against the same store continues the newest such
session from what it committed, so killing a tune loses at most the batch in flight.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target

from bcd_core import __version__
from bcd_core.clustering import Cluster, cluster_of, cluster_tasks
from bcd_core.cores import kernel_threads, tvm_default_threads
from bcd_core.cost_model.metrics import batch_metrics
from bcd_core.cost_model.stored import python_model
from bcd_core.design_space import space_generator
from bcd_core.errors import BcdError, StoreError
from bcd_core.layout import LayoutMode
from bcd_core.memory.recall import TuningMemory
from bcd_core.model_import import ImportedModel, import_model
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.failed_run import FAILED_RUN_SECS, is_failed_run, runner_latency
from bcd_core.records.states import EventKind, SessionStatus, TaskStatus, TrialOrigin
from bcd_core.records.store import (
    RecordStore,
    TrialRow,
)
from bcd_core.records.timing import TVM_DEFAULT_THREADS, WARM, timing_for
from bcd_core.target import describe_target, is_gpu, target_key, target_of_key
from bcd_core.tasks import Task, extract_tasks
from bcd_core.tuning.continuation import NEW_SESSION_ADVICE, apply_decision, decide_session, wish_of
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.events import (
    Listener,
    RoundFinished,
    SessionFinished,
    SessionMessage,
    SessionPaused,
    SessionStarted,
    TuneEvent,
)
from bcd_core.tuning.measure.setup import Measurers
from bcd_core.tuning.options import RETIRED_STRATEGIES, settled_identity
from bcd_core.tuning.settings import (
    DEFAULT_CLUSTER_MODE,
    DEFAULT_MATH,
    IDENTITY_ADDED_LATER,
    TuneSettings,
)
from bcd_core.tuning.stand_ins import model_best

log = logging.getLogger("bcd.tuning")
MAX_ERROR_CHARS = 4000
# A task none of whose candidates built and ran in this many rounds is given up (skipped,
# with the error as the reason) instead of eating the budget of the tasks that work.
ROUNDS_BEFORE_GIVING_UP = 2


@dataclass
class PreparedModel:
    """A model ready to tune: imported, split into tasks and clustered."""

    imported: ImportedModel
    target: Target
    tasks: list[Task]
    clusters: list[Cluster]
    prepare_s: float


def prepare_model(
    model_path: str | Path,
    target: Target,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    cluster_mode: str = DEFAULT_CLUSTER_MODE,
    math: str = DEFAULT_MATH,
    layout: str = LayoutMode.PLAIN,
) -> PreparedModel:
    start = time.perf_counter()
    imported = import_model(model_path, input_shapes, math, layout, target)
    tasks = extract_tasks(imported.relax_mod, target)
    if not tasks:
        raise BcdError(f"{Path(model_path).name} has no tunable operators")
    clusters = cluster_tasks(tasks, cluster_mode)
    return PreparedModel(imported, target, tasks, clusters, time.perf_counter() - start)


def estimated_latency(tasks: Sequence[Task], best: dict[int, float]) -> float | None:
    """Sum of weight x best latency; defined once every task has a valid measurement."""
    if any(task.index not in best for task in tasks):
        return None
    return sum(task.weight * best[task.index] for task in tasks)


def _seconds(values: Any) -> list[float]:
    return [float(getattr(v, "value", v)) for v in values]


def check_same_kernel_threads(session: dict[str, Any], stored: dict[str, Any]) -> None:
    """Refuse to add trials timed on another thread count to a CPU session's (records/timing.py)."""
    target = target_of_key(session["target_key"])
    if target is None or is_gpu(target):
        return
    recorded = int(stored.get("kernel_threads", TVM_DEFAULT_THREADS))
    ran_on = recorded or tvm_default_threads()  # stored before bcd set the count: TVM's default
    if kernel_threads() != ran_on:
        raise StoreError(
            f"session {session['id']} ran its kernels on {ran_on} thread(s), this process runs them on "
            f"{kernel_threads()}: its new trials would not compare with its old ones; resume it with "
            f"TVM_NUM_THREADS={ran_on} in the environment, or {NEW_SESSION_ADVICE}"
        )


def check_resumable(session: dict[str, Any], imported: ImportedModel, key: str, settings: TuneSettings) -> None:
    """Refuse to continue a session whose model, target, settings or tool version changed:
    its records would be mixed with measurements of something else."""
    sid = session["id"]
    if session["model_hash"] != imported.sha256:
        raise StoreError(
            f"session {sid} tuned {session['model_name']} (sha256 {session['model_hash'][:12]}), but "
            f"{imported.path.name} now has different contents (sha256 {imported.sha256[:12]}); open the "
            f"original model, or {NEW_SESSION_ADVICE}"
        )
    if session["target_key"] != key:
        raise StoreError(
            f"session {sid} was tuned for target {session['target']}, not for this one ({key}); resume it "
            f"on the same target (--target), or {NEW_SESSION_ADVICE}"
        )
    stored = stored_identity(session)
    current = settings.identity()
    # Settings added after a session was written are not in its row: compare what it has.
    if session["strategy"] != settings.strategy or any(current.get(k) != v for k, v in stored.items()):
        raise StoreError(
            f"session {sid} was tuned with other settings ({session['strategy']}, {session['settings']}); "
            f"resume it with its own settings, or {NEW_SESSION_ADVICE}"
        )
    check_same_kernel_threads(session, stored)
    if session["tool_version"] != __version__:
        raise StoreError(
            f"session {sid} was written by bcd {session['tool_version']}, this is bcd {__version__}; its search "
            f"state may differ, so it cannot be continued: {NEW_SESSION_ADVICE}; its records stay "
            "in the store"
        )


def stored_identity(session: dict[str, Any]) -> dict[str, Any]:
    """A session's stored identity, with what a session written before a key existed ran
    with (IDENTITY_ADDED_LATER): not today's default for it."""
    stored = json.loads(session["settings"] or "{}")
    return {**IDENTITY_ADDED_LATER.get(session["strategy"], {}), **stored}


def settings_of_session(session: dict[str, Any], base: TuneSettings) -> TuneSettings:
    """`base` (measurement knobs) with the stored session's identity: what resuming it needs.
    A session that ran with a choice the tuner no longer offers cannot be continued."""
    strategy = session["strategy"]
    if strategy in RETIRED_STRATEGIES:
        raise StoreError(
            f"session {session['id']} was tuned with the {strategy} strategy, which is retired: "
            f"{RETIRED_STRATEGIES[strategy]}; its records stay in the store"
        )
    identity = stored_identity(session)
    settled = settled_identity(strategy)
    differs = {k: v for k, v in identity.items() if k in settled and v != settled[k]}
    if differs:
        ran = ", ".join(f"{k}={v}" for k, v in differs.items())
        raise StoreError(
            f"session {session['id']} ran with {ran}, which bcd no longer offers; {NEW_SESSION_ADVICE}; "
            "its records stay in the store"
        )
    kept = {k: v for k, v in identity.items() if k not in settled}
    unknown = sorted(set(kept) - {f.name for f in fields(TuneSettings)})
    if unknown:
        raise StoreError(
            f"session {session['id']} ran with settings this bcd does not have ({', '.join(unknown)}); "
            f"{NEW_SESSION_ADVICE}; its records stay in the store"
        )
    return replace(base, **{"strategy": strategy, **kept})


def task_rows(prepared: PreparedModel, database: SqliteDatabase, budget: int) -> list[dict[str, Any]]:
    """The store's rows for a new session's tasks, with their clusters and workloads."""
    rows = []
    for task in prepared.tasks:
        cluster = cluster_of(prepared.clusters, task.index)
        rows.append(
            {
                "idx": task.index,
                "name": task.name,
                "weight": task.weight,
                "flops": task.flops,
                "shapes": task.shapes,
                "dtypes": task.dtypes,
                "operator_key": task.operator_key,
                "sketch_key": task.sketch_key,
                "num_sketches": task.num_sketches,
                "cluster_id": cluster.id,
                "cluster_key": cluster.key,
                "is_representative": int(cluster.representative == task.index),
                "workload_id": database.commit_workload_id(task.mod),
                "budget": budget,
                "status": TaskStatus.QUEUED,
            }
        )
    return rows


def check_same_tasks(store: RecordStore, session_id: int, tasks: Sequence[Task]) -> None:
    """Refuse a stored session whose tasks differ from this extraction's."""
    stored = [row["name"] for row in store.tasks(session_id)]
    current = [task.name for task in tasks]
    if stored != current:
        raise StoreError(
            f"session {session_id} in {store.path} was tuned with different tasks "
            f"({len(stored)} stored vs {len(current)} now; was TVM upgraded?): {NEW_SESSION_ADVICE}"
        )


def measurement_outcome(built: Any, ran: Any) -> tuple[str | None, list[float] | None]:
    """(error, run seconds) of one candidate: the build's error, else the run's; a run
    timed at FAILED_RUN_SECS or more has no valid time."""
    error = None
    if built.error_msg:
        error = "build: " + str(built.error_msg)
    elif ran.error_msg:
        error = "run: " + str(ran.error_msg)
    run_secs = _seconds(ran.run_secs) if error is None and ran.run_secs is not None else None
    if run_secs and is_failed_run(run_secs):  # an empty list stays as it was before the shared definition
        run_secs, error = None, "run: no valid run time"
    return error, run_secs


def gave_no_time(ran: Any) -> bool:
    """Whether a runner result (MetaSchedule folds a failed build into it) has no valid run
    time, by the rule `measurement_outcome` applies."""
    return runner_latency(ran) is None


def batch_metrics_row(
    round_number: int, task_row_id: int, predicted: list[float] | None, trials: list[TrialRow]
) -> dict[str, Any] | None:
    """How well the cost model's scores ranked the batch (None: it scored nothing)."""
    if not predicted:
        return None
    throughput = [(1.0 / t.latency_s) if t.latency_s else 0.0 for t in trials]
    return {"round": round_number, "task_id": task_row_id, **batch_metrics(predicted, throughput)}


def by_task_index(by_row_id: dict[int, Any], row_to_index: dict[int, int]) -> dict[int, Any]:
    """A store query keyed by task row id, keyed by task index (rows of other sessions dropped)."""
    return {row_to_index[k]: v for k, v in by_row_id.items() if k in row_to_index}


def task_context(task: Task, target: Target, search_strategy: Any, rand_state: int) -> ms.TuneContext:
    """MetaSchedule's context for tuning `task`, as every strategy builds it."""
    return ms.TuneContext(
        mod=task.mod,
        target=target,
        space_generator=space_generator(task.mod, target),
        search_strategy=search_strategy,
        task_name=task.name,
        rand_state=rand_state,
        num_threads=int(target.attrs.get("num-cores", 0)) or "physical",
        logger=logging.getLogger(f"bcd.ms.{task.name}"),
    )


def admitted(run: TuningRun, task_index: int, *batch: list) -> tuple[list, ...]:
    """The part of a measured batch that the user's steering still wants (`admit_batch`)."""
    candidates = batch[0]
    keep = run.admit_batch(task_index, len(candidates)) if run.admit_batch and candidates else len(candidates)
    if keep < len(candidates):
        run.message(
            EventKind.INFO,
            f"{len(candidates) - keep} candidate(s) of {run.tasks[task_index].name} measured after a skip or "
            "a lower budget were not recorded",
            task_index,
        )
    return tuple(part[:keep] for part in batch)


def budget_offset_s(session: dict[str, Any], timings: Sequence[dict[str, Any]]) -> float:
    """What a time budget adds to the session's clock (tuning/stopping.py): the compiled model's
    timings, which the clock leaves out, less the layout probe, which it holds."""
    return sum(float(row.get("cost_s") or 0) for row in timings) - float(session.get("probe_s") or 0)


def stop_reason(status: str, control: TuningControl) -> str:
    """Why a run ended, in the words the session keeps."""
    if status == SessionStatus.STOPPED:
        return control.stop_reason
    return {SessionStatus.COMPLETED: "its trials are spent", SessionStatus.INTERRUPTED: "interrupted"}.get(
        status, "failed"
    )


class TuningRun:
    """One run of a session in this process: owns the clock, budgets, records and events."""

    def __init__(
        self,
        store: RecordStore,
        prepared: PreparedModel,
        settings: TuneSettings,
        listeners: Sequence[Listener] = (),
        new_session: bool = False,
        started_at: float | None = None,
        control: TuningControl | None = None,
        resume_session_id: int | None = None,
    ) -> None:
        self.store = store
        self.control = control or TuningControl()
        self.paused_s = 0.0
        self.prepared = prepared
        self.tasks = prepared.tasks
        self.target = prepared.target
        self.settings = settings
        self.listeners = list(listeners)
        self.target_key = target_key(self.target)
        self.database = SqliteDatabase(
            store, self.target_key, timing=timing_for(WARM, self.target_key, settings.kernel_threads)
        )
        self._process_start = started_at if started_at is not None else time.perf_counter()
        self.session_id, self.resumed = self._open_session(new_session, resume_session_id)
        self.continues_probe = False  # a layout probe's session, made this tune's (tuning/layout_choice.py)
        self.session = store.session(self.session_id)
        self._elapsed_offset = float(self.session["elapsed_s"] or 0.0)
        self.bookkeeping_s = float(self.session.get("bookkeeping_s") or 0.0)  # store, metrics, events, scheduling
        self.measurers = Measurers()  # its own, unless its tune shares one (tune.run_session)
        rows = store.tasks(self.session_id)
        self.task_row_ids = {row["idx"]: row["id"] for row in rows}
        self.workload_ids = {row["idx"]: row["workload_id"] for row in rows}
        self.round = store.last_round(self.session_id)
        row_to_index = {row_id: index for index, row_id in self.task_row_ids.items()}
        self.trial_counts = by_task_index(store.trial_counts(self.session_id), row_to_index)
        self.best = by_task_index(store.best_latencies(self.session_id), row_to_index)
        self.rounds_per_task = by_task_index(store.round_counts(self.session_id), row_to_index)
        self.best_history = by_task_index(store.best_history(self.session_id), row_to_index)
        # Trials per task x tasks, unless the user changed the session's total while it ran.
        self.trials_total = int(self.session.get("total_budget") or settings.trials_per_task * len(self.tasks))
        self.cost_model: ms.cost_model.CostModel | None = None
        self.contexts: dict[int, ms.TuneContext] = {}  # task index -> context
        # Diffused candidates by module hash: (origin, source trial id, adaptation), for provenance.
        self.provenance: dict[int, tuple[str, int | None, str]] = {}
        self.memory: TuningMemory | None = None  # earlier tunes' programs (bcd_core/memory), when used
        self.batch_hooks: list[Any] = []  # called as hook(task_index, trials, trial_ids)
        # How many of a task's measured batch to record, asked before recording it: a
        # steerable strategy drops what the user's skips and budgets no longer want.
        self.admit_batch: Callable[[int, int], int] | None = None
        # Strategies whose scheduler cannot be steered (stock MetaSchedule's C++ one) honour
        # pause and stop from the measure callback instead.
        self.control_in_callback = False
        self.stopped_from_callback = False
        self.cut_reason: str | None = None  # why it ended early unstopped (tuning/probe_cutoff.py)
        self.end_reason: str | None = None  # why it completed with trials left (a layout probe's)
        self.given_up: set[int] = set()  # tasks whose every candidate failed
        self.final_estimate: float | None = None  # the final milestone's re-timed one (milestones.py), kept

    # -- session identity -----------------------------------------------------------------
    def _open_session(self, new_session: bool, resume_session_id: int | None = None) -> tuple[int, bool]:
        """Open what continuation.py decides: a stored session, once checked, or a new one."""
        imported, key, wish = self.prepared.imported, self.target_key, wish_of(new_session, resume_session_id)
        self.decision = decide_session(self.store, imported.sha256, key, self.settings, wish, resume_session_id)
        if self.decision.session_id is not None:
            existing = self.store.session(self.decision.session_id)
            check_resumable(existing, imported, self.target_key, self.settings)
            check_same_tasks(self.store, existing["id"], self.tasks)
            if self.decision.tunes:  # a completed session is only opened, to say so
                apply_decision(self.store, self.decision)
                self.store.claim_session(existing["id"])
            return existing["id"], True
        session_id = self.store.create_session(
            model_path=str(imported.path.resolve()),
            model_hash=imported.sha256,
            target=str(self.target),
            target_key=self.target_key,
            strategy=self.settings.strategy,
            settings=self.settings.identity(),
        )
        self.store.add_tasks(session_id, task_rows(self.prepared, self.database, self.settings.trials_per_task))
        return session_id, False

    # -- clock, budgets, events -----------------------------------------------------------
    def elapsed(self) -> float:
        """Session time: earlier runs plus this one, including import and extraction."""
        return self._elapsed_offset + (time.perf_counter() - self._process_start) - self.paused_s

    @property
    def trials_done(self) -> int:
        return sum(self.trial_counts.values())

    def emit(self, event: TuneEvent) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # an observer must never stop the tuner
                log.exception("event listener failed")

    def message(self, kind: str, text: str, task_index: int | None = None) -> None:
        row_id = self.task_row_ids.get(task_index) if task_index is not None else None
        self.store.add_event(self.session_id, self.elapsed(), kind, text, row_id)
        getattr(log, "warning" if kind in (EventKind.WARNING, EventKind.FALLBACK) else "info")(text)
        self.emit(SessionMessage(self.session_id, kind, text, task_index))

    def start(self) -> None:
        session = self.store.session(self.session_id)
        offset = budget_offset_s(session, self.store.model_latencies(self.session_id))
        counts = (len(self.tasks), self.trials_total, self.trials_done)
        started = SessionStarted(self.session_id, self.resumed, *counts, self.elapsed(), offset, self.continues_probe)
        self.emit(started)
        verb = "continues its layout probe" if self.continues_probe else "resumed" if self.resumed else "started"
        self.message(
            EventKind.INFO,
            f"session {self.session_id} {verb}: {len(self.tasks)} tasks, {self.settings.strategy}, "
            f"{describe_target(self.target)}, {self.trials_done}/{self.trials_total} trials done",
        )

    def finish(self, status: str) -> None:
        # The store's is the latest: the search's from the last round, or re-timed at the end.
        stored = self.store.session(self.session_id)["estimated_latency_s"]
        estimate = self.final_estimate or stored or estimated_latency(self.tasks, model_best(self))
        completed = (self.cut_reason or self.end_reason) if status == SessionStatus.COMPLETED else None
        reason = completed or stop_reason(status, self.control)
        elapsed, final = self.elapsed(), self.final_estimate
        self.store.finish_session(self.session_id, status, elapsed, self.bookkeeping_s, final, reason)
        self.emit(SessionFinished(self.session_id, status, self.trials_done, estimate, elapsed, reason))

    # -- contexts -------------------------------------------------------------------------
    def make_context(self, task: Task, search_strategy: Any) -> ms.TuneContext:
        context = task_context(task, self.target, search_strategy, self.settings.seed * 1000 + task.index + self.round)
        self.contexts[task.index] = context
        return context

    # -- recording ------------------------------------------------------------------------
    def origin_of(self, task_index: int, candidate: Any) -> tuple[str, int | None, str | None]:
        """(origin, source trial id, adaptation) of a candidate. A diffused program is
        diffused once: when a later search happens to measure the same module again, that
        trial is the search's (a resumed plan would otherwise see a diffusion round there)."""
        found = self.provenance.pop(int(tvm_ffi.structural_hash(candidate.sch.mod)), None) if self.provenance else None
        return found if found is not None else (TrialOrigin.EVOLVED, None, None)

    def predict(self, task_index: int, candidates: list[Any]) -> list[float] | None:
        if self.cost_model is None or task_index not in self.contexts:
            return None
        scores = python_model(self.cost_model).predict(self.contexts[task_index], candidates)
        return [float(s) for s in scores]

    def record_batch(self, task_index: int, candidates: list, builder_results: list, runner_results: list) -> None:
        candidates, builder_results, runner_results = admitted(
            self, task_index, candidates, builder_results, runner_results
        )
        if not candidates:  # the search ran dry (tiny design space), or steering took the batch back
            return
        started = time.perf_counter()
        try:
            self._record_batch(task_index, candidates, builder_results, runner_results)
        finally:
            self.bookkeeping_s += time.perf_counter() - started
        if self.control_in_callback:
            self._honour_control()

    def wait_while_paused(self) -> float:
        """Block while the user has the tune paused, telling listeners; returns seconds waited."""
        if not self.control.paused or self.control.stop_requested:
            return 0.0
        self.message(EventKind.INFO, "paused")
        self.emit(SessionPaused(self.session_id, True))
        waited = self.control.wait_while_paused()
        self.paused_s += waited
        if not self.control.stop_requested:
            self.message(EventKind.INFO, "resumed")
            self.emit(SessionPaused(self.session_id, False))
        return waited

    def _honour_control(self) -> None:
        self.wait_while_paused()
        if self.control.stop_requested:
            self.message(EventKind.INFO, f"{self.control.stop_reason}: stopped after a saved batch")
            self.stopped_from_callback = True
            raise StopTuning  # aborts tune_tasks; batches not yet joined were never committed

    def _record_batch(self, task_index: int, candidates: list, builder_results: list, runner_results: list) -> None:
        task = self.tasks[task_index]
        workload = self.database.commit_workload(task.mod)
        predicted = self.predict(task_index, candidates)
        self.round += 1
        elapsed = self.elapsed()
        trials = [
            self._trial_row(
                task_index, workload, elapsed, candidate, built, ran, predicted[position] if predicted else None
            )
            for position, (candidate, built, ran) in enumerate(zip(candidates, builder_results, runner_results))
        ]
        failed = sum(t.error is not None for t in trials)
        self._update_task_progress(task_index, trials)
        estimate = estimated_latency(self.tasks, model_best(self))
        timeline = self._timeline_row(task_index, elapsed, trials, failed, estimate)
        metrics = batch_metrics_row(self.round, self.task_row_ids[task_index], predicted, trials)
        trial_ids = self.store.record_round(self.session_id, trials, timeline, metrics, self.bookkeeping_s)
        for hook in self.batch_hooks:
            hook(task_index, trials, trial_ids)
        if task_index not in self.best and self.rounds_per_task[task_index] >= ROUNDS_BEFORE_GIVING_UP:
            self.give_up(task_index, [t.error for t in trials if t.error])
        self._emit_round(task_index, len(trials), failed, estimate, elapsed)

    def _trial_row(
        self,
        task_index: int,
        workload: Any,
        elapsed: float,
        candidate: Any,
        built: Any,
        ran: Any,
        predicted_score: float | None,
    ) -> TrialRow:
        """One measured candidate as the store keeps it, with its origin."""
        error, run_secs = measurement_outcome(built, ran)
        record = ms.database.TuningRecord(
            candidate.sch.trace, workload, run_secs or [FAILED_RUN_SECS], self.target, candidate.args_info
        )
        trace_json, _, _, args_json = record.as_json()
        origin, source, adaptation = self.origin_of(task_index, candidate)
        return TrialRow(
            task_id=self.task_row_ids[task_index],
            workload_id=self.workload_ids[task_index],
            round=self.round,
            elapsed_s=elapsed,
            run_secs=run_secs,
            error=error[:MAX_ERROR_CHARS] if error else None,
            trace=trace_json,
            args_info=args_json,
            target_key=self.target_key,
            origin=origin,
            source_trial_id=source,
            adaptation=adaptation,
            predicted_score=predicted_score,
        )

    def _update_task_progress(self, task_index: int, trials: list[TrialRow]) -> None:
        """The task's best latency, trial and round counts, and best-per-round, after a batch."""
        latencies = [t.latency_s for t in trials if t.latency_s is not None]
        if latencies:
            self.best[task_index] = min([*latencies, self.best.get(task_index, float("inf"))])
        self.trial_counts[task_index] = self.trial_counts.get(task_index, 0) + len(trials)
        self.rounds_per_task[task_index] = self.rounds_per_task.get(task_index, 0) + 1
        self.best_history.setdefault(task_index, []).append(self.best.get(task_index, float("inf")))

    def _timeline_row(
        self, task_index: int, elapsed: float, trials: list[TrialRow], failed: int, estimate: float | None
    ) -> dict[str, Any]:
        """The session's timeline entry for this round."""
        return {
            "round": self.round,
            "elapsed_s": elapsed,
            "task_id": self.task_row_ids[task_index],
            "trials_done": self.trials_done,
            "batch_size": len(trials),
            "batch_failed": failed,
            "best_task_latency_s": self.best.get(task_index),
            "estimated_latency_s": estimate,
        }

    def _emit_round(
        self, task_index: int, batch_size: int, failed: int, estimate: float | None, elapsed: float
    ) -> None:
        """Tell the listeners the round is recorded."""
        self.emit(
            RoundFinished(
                session_id=self.session_id,
                round=self.round,
                task_index=task_index,
                task_name=self.tasks[task_index].name,
                batch_size=batch_size,
                batch_failed=failed,
                best_task_latency_s=self.best.get(task_index),
                estimated_latency_s=estimate,
                trials_done=self.trials_done,
                trials_total=self.trials_total,
                elapsed_s=elapsed,
            )
        )

    def give_up(self, task_index: int, errors: list[str]) -> None:
        """Skip a task whose candidates all failed, saying why (the commonest error)."""
        if task_index in self.given_up:
            return
        self.given_up.add(task_index)
        first_lines = [error.splitlines()[0][:300] for error in errors if error.strip()] or ["no valid run time"]
        reason = max(set(first_lines), key=first_lines.count)
        self.store.update_task(self.task_row_ids[task_index], status=TaskStatus.SKIPPED)
        self.message(
            EventKind.WARNING,
            f"{self.tasks[task_index].name}: skipped, all {self.trial_counts[task_index]} candidates failed "
            f"({reason}); check the target, or the builder/runner timeouts",
            task_index,
        )


class StopTuning(Exception):
    """Raised from a measure callback to end a stock MetaSchedule tune early."""


@derived_object
class RecordTrials(ms.measure_callback.PyMeasureCallback):
    """Writes each measured batch to the store (replaces MetaSchedule's AddToDatabase)."""

    def __init__(self, run: TuningRun, context_tasks: list[int]) -> None:
        super().__init__()
        self.run = run
        self.context_tasks = context_tasks  # scheduler's task id -> our task index

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
        self.run.record_batch(self.context_tasks[task_id], measure_candidates, builder_results, runner_results)


def standard_callbacks(recorder: RecordTrials) -> list[ms.MeasureCallback]:
    """Ours first (it reads cost-model predictions before the model trains on the batch)."""
    return [recorder, ms.measure_callback.RemoveBuildArtifact(), ms.measure_callback.UpdateCostModel()]
