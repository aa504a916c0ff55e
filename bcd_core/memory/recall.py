"""Open the memory a tune draws on: earlier sessions on the same target, in the tune's own
store and in the stores the user names; recorded with the session so a resume draws on the
same sessions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tvm.s_tir.schedule import Trace

from bcd_core.cores import kernel_threads
from bcd_core.errors import StoreError
from bcd_core.memory.similar import RememberedTask, TaskLike, most_similar
from bcd_core.records.database import SqliteDatabase, workload_shash
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import PLAIN_LAYOUT, WARM, session_layout, session_timing, timing_difference, timing_for
from bcd_core.target import describe_target, device_key, target_of_key

Say = Callable[[str], None]  # where the memory's messages go (the session's log)


@dataclass(frozen=True)
class MemoryRequest:
    """What the user asked for: memory on or off, and stores to read besides the tune's own."""

    enabled: bool = True
    stores: tuple[str, ...] = ()


DEFAULT_MEMORY = MemoryRequest()  # on, from the tune's own store
COLD = MemoryRequest(enabled=False)


@dataclass
class MemorySource:
    """One store read as memory."""

    label: str  # "" for the tune's own store, else its path
    store: RecordStore
    database: SqliteDatabase

    @classmethod
    def of(cls, label: str, store: RecordStore, target_key: str) -> MemorySource:
        return cls(label, store, SqliteDatabase(store, target_key))


@dataclass(frozen=True)
class RememberedProgram:
    trace: Trace
    latency_s: float
    task: RememberedTask
    trial_id: int


@dataclass
class TuningMemory:
    sources: dict[str, MemorySource]
    tasks: list[RememberedTask]
    similar_cache: dict[int, list[RememberedTask]] = field(default_factory=dict)
    workload_hashes: dict[int, str] = field(default_factory=dict)  # task index -> workload_hash

    @property
    def sessions(self) -> list[dict[str, Any]]:
        """The sessions it draws on, as the store's memory_used rows."""
        seen: dict[tuple[str, int], str] = {}
        for task in self.tasks:
            seen.setdefault((task.store_label, task.session_id), task.model_name)
        return [{"store": label, "source_session_id": sid, "model_name": name} for (label, sid), name in seen.items()]

    def similar(self, task_index: int, task: TaskLike) -> list[RememberedTask]:
        if task_index not in self.similar_cache:
            shash = self.workload_hash(task_index, task)
            self.similar_cache[task_index] = most_similar(task, self.tasks, shash=shash)
        return self.similar_cache[task_index]

    def workload_hash(self, task_index: int, task: TaskLike) -> str:
        if task_index not in self.workload_hashes:
            self.workload_hashes[task_index] = workload_hash(task)
        return self.workload_hashes[task_index]

    def is_same_workload(self, task_index: int, task: TaskLike, remembered: RememberedTask) -> bool:
        """Whether `remembered` tuned this very workload (its programs apply unchanged)."""
        return bool(remembered.shash) and remembered.shash == self.workload_hash(task_index, task)

    def programs(
        self, task_index: int, task: TaskLike, count: int, exclude: set[tuple[str, int]]
    ) -> list[RememberedProgram]:
        """Up to `count` programs of the task's most similar remembered tasks, the nearest
        task's best first, then one by one from each task in turn; (store, trial id) pairs in
        `exclude` (already diffused into it) are skipped."""
        per_task = []
        for remembered in self.similar(task_index, task):
            label = remembered.store_label
            source = self.sources[label]
            rows = source.store.task_trials(remembered.session_id, remembered.task_id, count + len(exclude))
            per_task.append([(row, remembered, source) for row in rows if (label, row["id"]) not in exclude])
        picked: list[RememberedProgram] = []
        traces: set[str] = set()
        for rank in range(max((len(rows) for rows in per_task), default=0)):
            for rows in per_task:
                if rank < len(rows) and len(picked) < count:
                    row, remembered, source = rows[rank]
                    if row["trace"] in traces:
                        continue
                    traces.add(row["trace"])
                    trace = source.database.record_from_row(row).trace
                    picked.append(RememberedProgram(trace, row["latency_s"], remembered, row["id"]))
        return picked

    def describe(self) -> str:
        models = sorted({task.model_name for task in self.tasks})
        return f"{len(self.sessions)} earlier sessions ({', '.join(models)}), {len(self.tasks)} tuned tasks"


def workload_hash(task: TaskLike) -> str:
    """The structural hash the store keys the task's workload by ("" without a module)."""
    mod = getattr(task, "mod", None)
    return "" if mod is None else workload_shash(mod)


def open_memory_store(path: str | Path) -> RecordStore:
    """A store named with --memory, read-only; StoreError with one line if it cannot be used."""
    try:
        return RecordStore(path, create=False, read_only=True)
    except StoreError as err:
        raise StoreError(
            f"--memory {path}: {err}. Tune without it (leave out --memory, or --no-memory) if you meant to"
        ) from None


def describe_target_key(key: str) -> str:
    """A stored target key as `describe_target` words it (the key itself if it is not one)."""
    target = target_of_key(key)
    return describe_target(target) if target is not None else key[:80]


def sessions_on_target(
    store: RecordStore, target_key: str, timing: str, model_hash: str, label: str, say: Say, layout: str = PLAIN_LAYOUT
) -> list[int]:
    """Ids of the store's sessions of other models tuned for `target_key` (on a GPU, for the
    same GPU from any host: `device_key`) and timed as `timing` says. Sessions for other
    targets, or timed otherwise (flushed caches against warm ones), are counted in a message:
    their timings do not compare with this tune's. The model's own
    other sessions are left out: a new session of a model starts over, so that two strategies
    tuned in one store compare on equal terms."""
    same, skipped = [], {}
    target, device = describe_target_key(target_key), device_key(target_key)
    for session in store.sessions():
        if session["model_hash"] == model_hash:
            continue
        if device_key(session["target_key"]) != device:
            reason = f"were tuned for {describe_target_key(session['target_key'])}, not for {target}"
        elif (timed := session_timing(session)) != timing:
            reason = timing_difference(timed, timing)
        elif (theirs := session_layout(session)) != layout:
            reason = f"tuned convolutions in the {theirs} layout, this tune in the {layout} one"
        else:
            same.append(session["id"])
            continue
        skipped[reason] = skipped.get(reason, 0) + 1
    where = label or "this store"
    for reason, count in skipped.items():
        say(f"memory: {count} session(s) in {where} {reason}; not used")
    return same


def build_memory(
    sources: dict[str, MemorySource], session_ids: dict[str, list[int]], tasks: Sequence[TaskLike]
) -> TuningMemory | None:
    """The memory of `session_ids` per source, keeping only sessions with a task similar to
    one of `tasks`; None when nothing is."""
    remembered = [
        RememberedTask.from_row(label, row)
        for label, ids in session_ids.items()
        for row in sources[label].store.remembered_tasks(ids)
    ]
    memory = TuningMemory(sources, remembered)
    useful = {(t.store_label, t.session_id) for i, task in enumerate(tasks) for t in memory.similar(i, task)}
    # Every task's most similar ones are in the sessions kept, so its cached choice stands.
    memory.tasks = [t for t in remembered if (t.store_label, t.session_id) in useful]
    return memory if memory.tasks else None


def open_sources(own: RecordStore, target_key: str, paths: Sequence[str]) -> dict[str, MemorySource]:
    sources = {"": MemorySource.of("", own, target_key)}
    for path in paths:
        label = str(Path(path).resolve())
        if Path(label) == own.path.resolve() or label in sources:
            continue
        sources[label] = MemorySource.of(label, open_memory_store(path), target_key)
    return sources


def gather_memory(
    own: RecordStore, session: dict[str, Any], tasks: Sequence[TaskLike], request: MemoryRequest, say: Say
) -> TuningMemory | None:
    """A new session's memory: every earlier session of another model on its target in the
    own store and in `request.stores`, recorded with the session."""
    if not request.enabled:
        return None
    key, model_hash, timing = session["target_key"], session["model_hash"], session_timing(session)
    layout = session_layout(session)
    sources = open_sources(own, key, request.stores)
    session_ids = {
        label: sessions_on_target(source.store, key, timing, model_hash, label, say, layout)
        for label, source in sources.items()
    }
    memory = build_memory(sources, session_ids, tasks)
    own.record_memory_used(session["id"], memory.sessions if memory else [])
    return memory


def recorded_memory(
    own: RecordStore, session_id: int, target_key: str, tasks: Sequence[TaskLike], say: Say
) -> TuningMemory | None:
    """A resumed session's memory: the sessions it recorded when it started."""
    rows = own.memory_used(session_id)
    if not rows:
        return None
    paths = sorted({row["store"] for row in rows if row["store"]})
    sources = {"": MemorySource.of("", own, target_key)}
    for path in paths:
        try:
            sources[path] = MemorySource.of(path, open_memory_store(path), target_key)
        except StoreError as err:
            say(f"memory: {err}; resuming without that store")
    session_ids: dict[str, list[int]] = {}
    for row in rows:
        if row["store"] in sources:
            session_ids.setdefault(row["store"], []).append(int(row["source_session_id"]))
    return build_memory(sources, session_ids, tasks)


def preview_memory(
    paths: Sequence[str],
    target_key: str,
    model_hash: str,
    tasks: Sequence[TaskLike],
    say: Say,
    timing: str | None = None,
    layout: str = PLAIN_LAYOUT,
) -> TuningMemory | None:
    """The memory a tune of `tasks` timed as `timing` says (by default as a tune started now
    would be) would draw on from the stores at `paths` (read-only, for `bcd inspect --db`);
    nothing is recorded."""
    timing = timing or timing_for(WARM, target_key, kernel_threads())
    sources = {}
    for path in paths:
        label = str(Path(path).resolve())
        sources[label] = MemorySource.of(label, open_memory_store(path), target_key)
    session_ids = {
        label: sessions_on_target(source.store, target_key, timing, model_hash, label, say, layout)
        for label, source in sources.items()
    }
    return build_memory(sources, session_ids, tasks)
