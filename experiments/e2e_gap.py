"""Where a compiled model's time goes against its estimate (docs/benchmarks.md, "What limits these figures").

The estimate is the sum over tasks of weight x best measured latency (each task timed alone by
MetaSchedule's runner). This compiles a tuned session's model from its store, times it end to
end, then times every call the Relax VM makes (each task's kernel, and the VM's own builtins:
allocation, reshapes, copies) with the VM's instrument hook, and prints per task its estimate
beside its time inside the model.

    python experiments/e2e_gap.py runs/bench/squeezenet1_1-32/squeezenet1_1/bcd-seed0.db \
        $MODELS/squeezenet1_1.onnx [--alone]

With --alone, each task's best program is also timed by itself on standard-normal inputs, with
warm caches (as MetaSchedule's runner times candidates) and with its arguments flushed from the
caches before each call, to tell the effect of the inputs' values from that of the caches.

The model is built with the VM's bytecode (the instrument sees only its calls); exported
models run the VM's function compiled on CPUs, a little faster between kernels (exec_mode.py).
The instrument runs Python around every call, which adds a few microseconds to each: the
script times an empty instrument too and prints that cost per call, so it can be subtracted.
Run it alone: the figures are wall-clock measurements.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import tvm
from tvm import relax

from bcd_core.export import compile_tuned, session_input_shapes, session_math, session_target
from bcd_core.model_import import import_model, random_inputs
from bcd_core.records.database import SqliteDatabase
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import session_layout, session_timing
from bcd_core.session_view import default_session
from bcd_core.target import describe_target, target_key
from bcd_core.tasks import Task, extract_tasks
from bcd_core.timing import time_in_turns, time_runs
from bcd_core.tuned_build import BYTECODE
from bcd_core.untuned import standard_normal_arguments

# TVM's packed function that flushes the CPU caches of every argument but the first before a run.
FLUSH_BEFORE_EACH_RUN = "cache_flush_cpu_non_first_arg"

NO_OP = 0  # VMInstrumentReturnKind: run the call as usual


def estimate_per_task_us(store: RecordStore, session_id: int, database: SqliteDatabase) -> dict[str, tuple[int, float]]:
    """Task name -> (weight, weight x latency in us of the record the compiler applies: its
    re-timed latency where a milestone timed it again, as the session's estimate sums it)."""
    estimate = {}
    for row in store.tasks(session_id):
        leaders = database.top_rows(row["workload_id"], 1)
        if leaders:
            estimate[row["name"]] = (row["weight"], row["weight"] * leaders[0]["latency_s"] * 1e6)
    return estimate


def search_estimate_us(store: RecordStore, session_id: int) -> float:
    """The search's own estimate: each task's best single measurement."""
    best = store.best_latencies(session_id)
    return sum(row["weight"] * best[row["id"]] * 1e6 for row in store.tasks(session_id) if row["id"] in best)


class CallTimer:
    """The VM's instrument: summed seconds per called symbol since the last `reset`."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.started: dict[str, list[float]] = defaultdict(list)

    def reset(self) -> None:
        self.spent.clear()
        self.started.clear()

    def __call__(self, _func, symbol, before, _ret, *_args) -> int:
        now = time.perf_counter()
        if before:
            self.started[symbol].append(now)
        else:
            self.spent[symbol] += now - self.started[symbol].pop()
        return NO_OP


def instrumented_runs(vm: relax.VirtualMachine, arguments: list, repeat: int) -> tuple[dict[str, float], float]:
    """Median over `repeat` runs of each called symbol's summed time per run (us), and the
    median instrumented run (us)."""
    per_symbol: dict[str, list[float]] = defaultdict(list)
    totals: list[float] = []
    timer = CallTimer()
    vm.set_instrument(timer)
    for _ in range(repeat):
        timer.reset()
        begin = time.perf_counter()
        vm["main"](*arguments)
        totals.append((time.perf_counter() - begin) * 1e6)
        for symbol, seconds in timer.spent.items():
            per_symbol[symbol].append(seconds * 1e6)
    return {s: statistics.median(v) for s, v in per_symbol.items()}, statistics.median(totals)


def empty_instrument_cost_us(vm: relax.VirtualMachine, arguments: list, plain_us: float, calls: int) -> float:
    """What an instrument that does nothing adds per call."""

    def nothing(*_args) -> int:
        return NO_OP

    vm.set_instrument(nothing)
    timing = time_runs(lambda: vm["main"](*arguments))
    return max(0.0, (timing.median_ms * 1e3 - plain_us) / max(calls, 1))


def call_counts(vm: relax.VirtualMachine, arguments: list) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)

    def count(_func, symbol, before, *_rest) -> int:
        if before:
            counts[symbol] += 1
        return NO_OP

    vm.set_instrument(count)
    vm["main"](*arguments)
    return counts


def alone_us(task: Task, database: SqliteDatabase, target, flush: bool, repeat: int = 30) -> float:
    """The task's best program timed alone on standard-normal inputs (as the untuned estimate
    is), per call in us: warm caches as MetaSchedule's runner times it, or with every argument
    but the first flushed from the caches before each call (`flush`)."""
    schedule = database.query_schedule(task.mod, target, workload_name=task.name)
    if schedule is None:
        return math.nan
    library = tvm.compile(schedule.mod, target=target).mod
    return library_us(library, standard_normal_arguments(task, tvm.cpu()), flush, repeat)


def library_us(library, arguments: list, flush: bool, repeat: int) -> float:
    """Median us per call of a compiled task: runs of 10 warm calls, or of one call after
    every argument but the first left the caches (`flush`)."""
    timer = library.time_evaluator(
        "main", tvm.cpu(), number=1 if flush else 10, repeat=repeat, f_preproc=FLUSH_BEFORE_EACH_RUN if flush else ""
    )
    return statistics.median(timer(*arguments).results) * 1e6


def record_library(task: Task, record, target):
    """One tuning record's program for `task`, compiled by itself."""
    sch = tvm.s_tir.Schedule(task.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    return tvm.compile(sch.mod, target=target).mod


def print_models_in_turns(vms: dict[str, relax.VirtualMachine], arguments: list, passes: int) -> None:
    """Time compiled models in turns (bcd_core/timing.py), `passes` times 5 blocks of 100 runs,
    and print each model's medians."""
    runs = {name: (lambda vm=vm: vm["main"](*arguments)) for name, vm in vms.items()}
    medians: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(passes):
        for name, timing in time_in_turns(runs, runs=100, passes=5).items():
            medians[name].append(timing.median_ms)
    for name, values in medians.items():
        print(f"{name:16} " + " ".join(f"{v:8.3f}" for v in values) + f"   median {statistics.median(values):8.3f} ms")


def alone_columns(model_mod, database: SqliteDatabase, target) -> dict[str, tuple[float, float]]:
    """Task name -> (alone warm, alone flushed), both per call in us."""
    return {
        task.name: (alone_us(task, database, target, False), alone_us(task, database, target, True))
        for task in extract_tasks(model_mod, target)
    }


def print_table(
    estimate: dict[str, tuple[int, float]],
    inside: dict[str, float],
    counts: dict[str, int],
    per_call_us: float,
    alone: dict[str, tuple[float, float]],
) -> None:
    header = f"{'call':48} {'calls':>5} {'estimate us':>12} {'in model us':>12} {'ratio':>6}"
    print(header + (f" {'alone warm':>11} {'alone cold':>11}" if alone else ""))
    rows = sorted(inside.items(), key=lambda item: -item[1])
    for symbol, spent in rows:
        weight_estimate = estimate.get(symbol)
        corrected = spent - per_call_us * counts[symbol] if weight_estimate else spent
        est = f"{weight_estimate[1]:12.1f}" if weight_estimate else f"{'(no task)':>12}"
        ratio = f"{corrected / weight_estimate[1]:6.2f}" if weight_estimate else ""
        line = f"{symbol[:48]:48} {counts[symbol]:5d} {est} {corrected:12.1f} {ratio:>6}"
        if symbol in alone and weight_estimate:
            weight = weight_estimate[0]
            line += f" {alone[symbol][0] * weight:11.1f} {alone[symbol][1] * weight:11.1f}"
        print(line)


def open_session(store: RecordStore, model: Path, session_id: int | None = None):
    """A session of the store (by default the one `bcd export` takes: the newest tune, not a
    layout probe stored after it), its target, the model imported as it was tuned, and the
    store's records as MetaSchedule's database for that target."""
    session = store.session(session_id) if session_id else default_session(store.sessions())
    target = session_target(session)
    imported = import_model(
        model, session_input_shapes(session), session_math(session), session_layout(session), target
    )
    database = SqliteDatabase(store, target_key(target), timing=session_timing(session))
    return session, target, imported, database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--session", type=int, help="default: the session bcd export takes")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--json", type=Path, help="also write the summary here (docs/benchmarks.md reads it)")
    parser.add_argument(
        "--alone", action="store_true", help="also time each task's best program alone, warm and cache-flushed"
    )
    args = parser.parse_args()
    with closing(RecordStore(args.store, create=False)) as store:
        session, target, imported, database = open_session(store, args.model, args.session)
        estimate = estimate_per_task_us(store, session["id"], database)
        searched = search_estimate_us(store, session["id"])
        executable = compile_tuned(database, imported.relax_mod, target, vm_mode=BYTECODE)  # the instrument's
        alone = alone_columns(imported.relax_mod, database, target) if args.alone else {}
    dev = tvm.cpu()
    vm = relax.VirtualMachine(executable, dev)
    inputs = random_inputs(imported.inputs)
    arguments = [tvm.runtime.tensor(array, device=dev) for array in inputs.values()]
    run: Callable[[], None] = lambda: vm["main"](*arguments)  # noqa: E731
    plain_us = time_runs(run).median_ms * 1e3
    counts = call_counts(vm, arguments)
    per_call_us = empty_instrument_cost_us(vm, arguments, plain_us, sum(counts.values()))
    inside, instrumented_us = instrumented_runs(vm, arguments, args.repeat)
    print_table(estimate, inside, counts, per_call_us, alone)
    task_calls = sum(v - per_call_us * counts[s] for s, v in inside.items() if s in estimate)
    # Builtins take about as long as the instrument itself: shown as timed, not corrected.
    other_calls = sum(v for s, v in inside.items() if s not in estimate)
    estimated = sum(e for _, e in estimate.values())
    print()
    print(f"search's estimate (single timings)   {searched:10.1f} us")
    print(f"estimate (sum of weight x applied)   {estimated:10.1f} us")
    print(f"measured end to end (no instrument)  {plain_us:10.1f} us   measured / estimate {plain_us / estimated:.3f}")
    print(f"tasks' kernels inside the model      {task_calls:10.1f} us   ({task_calls / estimated:.3f} x estimate)")
    print(f"other VM calls (builtins, as timed)  {other_calls:10.1f} us")
    print(f"between calls (VM dispatch)          {plain_us - task_calls - other_calls:10.1f} us")
    calls = sum(counts.values())
    print(f"instrument cost per call             {per_call_us:10.2f} us over {calls} calls (removed from kernels)")
    print(f"instrumented run                     {instrumented_us:10.1f} us")
    if args.json:
        summary = {
            "model": args.model.name,
            "layout": session_layout(session),
            "trials": session["trials_done"],
            "target": describe_target(target),
            "estimate_us": estimated,
            "search_estimate_us": searched,
            "measured_us": plain_us,
            "kernels_in_model_us": task_calls,
            "builtins_us": other_calls,
            "calls": calls,
            "alone_warm_us": sum(alone[s][0] * w for s, (w, _) in estimate.items() if s in alone) if alone else None,
            "alone_cold_us": sum(alone[s][1] * w for s, (w, _) in estimate.items() if s in alone) if alone else None,
        }
        args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
