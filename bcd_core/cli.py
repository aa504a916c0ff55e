"""`bcd`: everything the dashboard does, from a terminal or a script."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bcd_core import __version__
from bcd_core.cli_steer import TASK_TABLE_HEADERS, add_steer_command, task_table_rows
from bcd_core.errors import BcdError
from bcd_core.formatting import format_duration, format_latency
from bcd_core.timing import RUNS
from bcd_core.tuning.control import TuningControl
from bcd_core.tuning.options import OPTIONS_BY_FIELD, STOP_RULE_FIELDS, STRATEGIES, Level, Option, flagged_options
from bcd_core.tuning.settings import TuneSettings

if TYPE_CHECKING:
    from bcd_core.inspect_view import Inspection
    from bcd_core.tuning.continuation import SessionDecision

TUNE_DEFAULTS = TuneSettings()

DEFAULT_RUNS_DIR = Path("runs")
log = logging.getLogger("bcd")


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(out)


class ProgressBar:
    """Trials, elapsed, ETA and the best estimated latency on one line (a line per round
    when stderr is not a terminal, so logs stay readable)."""

    def __init__(self, stream: Any = sys.stderr, width: int = 28, time_budget_s: float | None = None) -> None:
        self.stream = stream
        self.time_budget_s = time_budget_s  # the session's clock it may use (--minutes)
        self.width = width
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.run_start = time.perf_counter()
        self.done_at_start = 0
        self.measured = ""  # the compiled model's latency at the last milestone
        self.timed_s = 0.0  # what the time budget adds to the session's clock (SessionStarted)

    def __call__(self, event: Any) -> None:
        from bcd_core.tuning.events import ModelMeasured, RoundFinished, SessionFinished, SessionMessage, SessionStarted

        if isinstance(event, SessionStarted):
            self.run_start = time.perf_counter()
            self.done_at_start = event.trials_done
            self.timed_s = event.budget_offset_s
            self.measured = ""  # a layout probe's timing is not this session's
        elif isinstance(event, SessionMessage):
            self._line(f"[{event.kind}] {event.message}")
        elif isinstance(event, RoundFinished):
            self._round(event)
        elif isinstance(event, ModelMeasured):
            self.measured = f"  measured {format_latency(event.measured_latency_s)} (at {event.trials_done})"
            self.timed_s += event.cost_s
        elif isinstance(event, SessionFinished):
            if self.tty:
                self.stream.write("\n")
            why = f" ({event.stop_reason})" if event.stop_reason else ""
            self._line(
                f"session {event.session_id} {event.status}{why}: {event.trials_done} trials, "
                f"estimated latency {format_latency(event.estimated_latency_s)}{self.measured}, "
                f"elapsed {format_duration(event.elapsed_s)}"
            )

    def _round(self, event: Any) -> None:
        from bcd_core.session_view import eta_by_clock

        total = max(event.trials_total, 1)
        share = min(event.trials_done / total, 1.0)
        budget = self.time_budget_s
        if budget:
            share = max(share, min((event.elapsed_s + self.timed_s) / budget, 1.0))
        filled = int(share * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        measured_here = event.trials_done - self.done_at_start
        spent = time.perf_counter() - self.run_start
        eta = spent / measured_here * max(total - event.trials_done, 0) if measured_here > 0 else None
        eta = eta_by_clock(eta, event.elapsed_s, budget, self.timed_s)
        text = (
            f"[{bar}] {event.trials_done}/{event.trials_total} trials  "
            f"elapsed {format_duration(event.elapsed_s)}  ETA {format_duration(eta)}  "
            f"est. {format_latency(event.estimated_latency_s)}{self.measured}  round {event.round}: {event.task_name}"
            + (f" ({event.batch_failed} failed)" if event.batch_failed else "")
        )
        if self.tty:
            self.stream.write("\r" + text[:200].ljust(120))
            self.stream.flush()
        else:
            self._line(text)

    def _line(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r")
        self.stream.write(text + "\n")
        self.stream.flush()


# -- commands -----------------------------------------------------------------------------
def cmd_inspect(args: argparse.Namespace) -> int:
    from bcd_core.inspect_view import inspect_model, inspection_json

    inspection = inspect_model(args.model, args.target, args.input_shape, args.db or (), args.math, args.conv_layout)
    if args.json:
        print(json.dumps(inspection_json(inspection), indent=2))
    else:
        _print_inspection(inspection)
    return 0


def _print_inspection(inspection: Inspection) -> None:
    """`bcd inspect`'s table view: summary, the task table, then every mode's clusters."""
    from bcd_core.inspect_view import (
        INSPECT_MODES,
        TABLE_HEADERS,
        cluster_lines,
        memory_lines,
        summary_lines,
        task_rows,
    )

    for line in summary_lines(inspection):
        print(line)
    print()
    print(table(list(TABLE_HEADERS), task_rows(inspection)))
    for mode in INSPECT_MODES:
        for line in cluster_lines(inspection, mode):
            print(line)
    if inspection.memory is not None or inspection.memory_notes:
        for line in memory_lines(inspection):
            print(line)
    print(f"\ninspected in {inspection.elapsed_s:.1f} s")


def settings_from_args(args: argparse.Namespace) -> Any:
    from bcd_core.model_import import parse_input_shapes

    if args.runner != "rpc" and (args.tracker or args.tracker_key):  # likely a forgotten --runner rpc
        raise BcdError("--tracker and --key choose remote servers: add --runner rpc (or drop them to measure here)")
    values = {option.field: getattr(args, option.field) for option in flagged_options() if hasattr(args, option.field)}
    try:
        return TuneSettings(
            **values,
            input_shapes={k: list(v) for k, v in parse_input_shapes(args.input_shape).items()},
        )
    except ValueError as err:
        raise BcdError(str(err)) from err


def default_db_path(model: str) -> Path:
    return DEFAULT_RUNS_DIR / f"{Path(model).stem}.db"


def _graceful_interrupt(control: TuningControl) -> Any:
    """First Ctrl-C: stop at the next round boundary (the batch in flight is saved).
    Second Ctrl-C: stop now (that batch is lost)."""

    def handler(signum: int, frame: Any) -> None:
        if control.stop_requested:
            raise KeyboardInterrupt
        control.stop()
        print("\nstopping after the batch in flight (Ctrl-C again to stop now)", file=sys.stderr)

    return handler


def memory_request(args: argparse.Namespace) -> Any:
    from bcd_core.memory.recall import MemoryRequest

    return MemoryRequest(enabled=not getattr(args, "no_memory", False), stores=tuple(args.memory or ()))


def session_decision(args: argparse.Namespace, db_path: Path, key: str, settings: TuneSettings) -> SessionDecision:
    """The engine's decision (tuning/continuation.py): continue which session, or a new one."""
    from bcd_core.model_import import file_sha256
    from bcd_core.tuning.continuation import decide_in, wish_of

    try:
        model_hash = file_sha256(Path(args.model))
    except OSError:  # missing or unreadable: the tune fails on it, saying why
        model_hash = ""
    return decide_in(db_path, model_hash, key, settings, wish_of(args.new_session, args.resume), args.resume)


def cmd_tune(args: argparse.Namespace) -> int:
    from bcd_core.target import parse_target, target_key
    from bcd_core.tuning.tune import run_session

    if args.new_session and args.resume is not None:
        raise BcdError("--new-session starts a session and --resume continues one: give one of them")
    settings = settings_from_args(args)
    target = parse_target(args.target)
    db_path = Path(args.db) if args.db else default_db_path(args.model)
    print(f"records: {db_path}", file=sys.stderr)
    if args.resume is not None:  # that session's own settings; model and target must still match
        from bcd_core.records.store import RecordStore
        from bcd_core.tuning.run import settings_of_session

        with closing(RecordStore(db_path, create=False)) as store:
            settings = settings_of_session(store.session(args.resume), settings)
    decision = session_decision(args, db_path, target_key(target), settings)
    # The same command again after it completed: said, not tuned again. (That session matched the
    # model, target and settings; a named one is checked by the engine before it says so.)
    if not decision.tunes and args.resume is None:
        print(f"{decision.reason}; `bcd tune --new-session` starts another", file=sys.stderr)
        if args.out:
            return export_session(db_path, decision.session_id, Path(args.out), args.model, check=not args.no_check)
        return 0
    if decision.tunes:
        print(decision.reason, file=sys.stderr)
    control = TuningControl()
    previous = signal.signal(signal.SIGINT, _graceful_interrupt(control))
    try:
        run = run_session(
            args.model,
            db_path,
            target,
            settings,
            [ProgressBar(time_budget_s=settings.minutes * 60 or None)],
            args.new_session,
            control,
            args.resume,
            memory_request(args),
        )
    except KeyboardInterrupt:
        print("\ninterrupted: every finished round is saved; run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
    if control.stop_requested and not control.stopped_by_rule:
        print("stopped: every finished round is saved; run the same command again to resume", file=sys.stderr)
        return 130
    if control.stopped_by_rule:
        print(
            f"stopped: {control.stop_reason}; every finished round is saved, and the same command with other "
            "limits resumes it",
            file=sys.stderr,
        )
    if args.out:
        return export_session(db_path, run.session_id, Path(args.out), model=args.model, check=not args.no_check)
    return 0


def _session_for_export(store: Any, session_id: int | None) -> dict[str, Any]:
    from bcd_core.session_view import default_session

    if session_id is not None:
        return store.session(session_id)
    session = default_session(store.sessions())
    if session is None:
        raise BcdError(f"{store.path} holds no tuning session; run `bcd tune` first")
    return session


def export_session(
    db_path: Path, session_id: int | None, out: Path, model: str | None, check: bool, runs: int = RUNS
) -> int:
    from bcd_core.export import export_tuned_session
    from bcd_core.records.store import RecordStore

    store = RecordStore(db_path, create=False)
    session = _session_for_export(store, session_id)
    say = lambda step, total, text: print(text, file=sys.stderr)  # noqa: E731
    result = export_tuned_session(store, session["id"], out, model, check=check, runs=runs, progress=say)
    print(f"exported {result.path} (session {session['id']}, {session['model_name']})", file=sys.stderr)
    if result.untuned:
        print(f"compiled untuned (skipped before any measurement): {', '.join(result.untuned)}", file=sys.stderr)
    return 0 if result.check is None else print_check(result.check)


def print_check(report: Any) -> int:
    print(f"tvm module   {report.tvm.timing.describe()}")
    if report.onnxruntime is None:
        return 0
    print(f"onnxruntime  {report.onnxruntime.timing.describe()}")
    verdict = "match" if report.matches else "DIFFER"
    print(f"outputs {verdict}: {report.comparison.describe()}")
    return 0 if report.matches else 1


def cmd_export(args: argparse.Namespace) -> int:
    return export_session(
        Path(args.db), args.session, Path(args.out), args.model, check=not args.no_check, runs=args.runs
    )


def cmd_report(args: argparse.Namespace) -> int:
    from bcd_core.records.store import RecordStore
    from bcd_core.report import write_report

    store = RecordStore(args.db, create=False)
    session = _session_for_export(store, args.session)
    files = write_report(store, session["id"], args.out)
    print(f"report: {files.html}\nrecords: {files.trials_csv}, {files.tasks_csv}, {files.json}")
    return 0


def cmd_check(args: argparse.Namespace, compare: bool = True) -> int:
    from bcd_core.export import check_library
    from bcd_core.model_import import load_onnx, parse_input_shapes, static_inputs

    model = load_onnx(args.onnx)
    overrides = parse_input_shapes(args.input_shape)
    specs = static_inputs(model, overrides)
    report = check_library(
        args.module, specs, model if compare else None, runs=args.runs, tolerance=args.tolerance, device=args.device
    )
    return print_check(report)


def cmd_bench(args: argparse.Namespace) -> int:
    from bcd_core.bench import format_report, run_bench
    from bcd_core.target import parse_target

    settings = settings_from_args(args)
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        raise BcdError(f"--strategies: unknown {', '.join(unknown) or '(none)'}; choose from {', '.join(STRATEGIES)}")
    if args.seeds < 1:
        raise BcdError("--seeds must be 1 or more")
    if args.seeds > 1 or len(args.model) > 1 or strategies != ["bcd"]:
        return _bench_matrix(args, settings, strategies)
    model = args.model[0]
    out = Path(args.out) if args.out else DEFAULT_RUNS_DIR / f"bench-{Path(model).stem}"
    say = lambda text: print(text, file=sys.stderr)  # noqa: E731
    memory = bench_memory(args)
    report = run_bench(model, parse_target(args.target), settings, out, [ProgressBar()], args.runs, say, memory)
    print(format_report(report))
    print(f"timelines, plot and JSON in {out}")
    return 0


def bench_memory(args: argparse.Namespace) -> Any:
    """Stock is always cold; BCD draws only on the stores named with --memory (a bench's own
    stores hold nothing earlier)."""
    from bcd_core.memory.recall import MemoryRequest

    return MemoryRequest(enabled=bool(args.memory), stores=tuple(args.memory or ()))


def _bench_matrix(args: argparse.Namespace, settings: Any, strategies: list[str]) -> int:
    from bcd_core.bench_matrix import markdown_table, run_matrix, write_matrix
    from bcd_core.target import parse_target

    out = Path(args.out) if args.out else DEFAULT_RUNS_DIR / "bench-matrix"
    say = lambda text: print(text, file=sys.stderr)  # noqa: E731
    command = "bcd " + " ".join(sys.argv[1:]) if sys.argv and Path(sys.argv[0]).name == "bcd" else "bcd bench"
    matrix = run_matrix(
        args.model,
        parse_target(args.target),
        settings,
        strategies,
        args.seeds,
        out,
        command,
        [ProgressBar()],
        args.runs,
        say,
        bench_memory(args),
    )
    print(markdown_table(matrix))
    print(f"stores, compiled models and matrix.json in {out}")
    write_matrix(matrix, out)
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    from bcd_core.records.json_io import export_json, import_json
    from bcd_core.records.store import RecordStore
    from bcd_core.session_view import session_status_text, strategy_text

    if args.db_command == "import-json":
        store = RecordStore(args.db)
        count = import_json(store, args.directory)
        print(f"imported {count} records from {args.directory} into {args.db}")
    elif args.db_command == "export-json":
        store = RecordStore(args.db, create=False)
        count = export_json(store, args.directory)
        print(f"exported {count} records from {args.db} to {args.directory}")
    elif args.db_command == "tasks":
        with closing(RecordStore(args.db, create=False)) as store:
            session, rows = task_table_rows(store, args.session)
        status = session_status_text(session)
        print(f"session {session['id']}: {session['model_name']}, {session['strategy']}, {status}")
        print(table(TASK_TABLE_HEADERS, rows))
    else:
        store = RecordStore(args.db, create=False)
        rows = [
            [
                s["id"],
                s["model_name"],
                strategy_text(s),
                session_status_text(s),
                s["trials_done"],
                format_latency(s["estimated_latency_s"]),
                format_duration(s["elapsed_s"]),
                s["started_at"],
            ]
            for s in store.sessions()
        ]
        print(table(["id", "model", "strategy", "status", "trials", "est. latency", "elapsed", "started"], rows))
    return 0


# -- argument parsing ---------------------------------------------------------------------
def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target", default="llvm", help="'llvm' (this CPU, the default), a JSON dict, or a tag like nvidia/nvidia-h100"
    )
    parser.add_argument(
        "--input-shape", action="append", metavar="NAME=D1,D2,...", help="fix the shape of a dynamic input (repeatable)"
    )


def _add_option(parser: Any, option: Option) -> None:
    """One row of the options table as an argument; research options are accepted but hidden
    (docs/reference.md lists them)."""
    default = getattr(TUNE_DEFAULTS, option.field)
    kwargs: dict[str, Any] = {"dest": option.field, "default": default, "metavar": option.metavar}
    if option.choices:
        kwargs["choices"] = [str(choice) for choice in option.choices]  # plain words in its messages
    elif option.type is not str:
        kwargs["type"] = option.type
    kwargs["help"] = option.help if option.level == Level.USER else argparse.SUPPRESS
    parser.add_argument(option.flag, **kwargs)


def _add_tuning_options(parser: argparse.ArgumentParser, *fields: str, exclude: tuple[str, ...] = ()) -> None:
    """The named options of the table, or all with a flag but those excluded."""
    options = [OPTIONS_BY_FIELD[f] for f in fields] if fields else flagged_options()
    rules = [o for o in options if o.field in STOP_RULE_FIELDS and o.field not in exclude]
    for option in options:
        if option.field not in exclude and option not in rules:
            _add_option(parser, option)
    if rules:  # read together in --help: what ends a tune besides its trials
        group = parser.add_argument_group("when to stop (besides the trials; the first rule met stops the tune)")
        for option in rules:
            _add_option(group, option)


def _add_inspect_command(sub: Any) -> None:
    inspect = sub.add_parser("inspect", help="list a model's tuning tasks and clusters")
    inspect.add_argument("model")
    _add_model_options(inspect)
    _add_tuning_options(inspect, "math", "conv_layout")
    inspect.add_argument(
        "--db",
        action="append",
        metavar="STORE",
        help="also list, per task, what a tune would draw on from the earlier tunes in this store (repeatable)",
    )
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    inspect.set_defaults(func=cmd_inspect)


def _add_tune_command(sub: Any) -> None:
    tune = sub.add_parser("tune", help="tune a model; re-running the same command resumes it")
    tune.add_argument("model")
    _add_model_options(tune)
    _add_tuning_options(tune)
    tune.add_argument("--db", help="records database (default runs/MODEL.db)")
    tune.add_argument(
        "--new-session",
        action="store_true",
        help="start a new session instead of continuing the newest one with these settings "
        "(a completed one is not tuned again without this)",
    )
    tune.add_argument(
        "--resume",
        type=int,
        metavar="SESSION",
        help="continue this session (its settings; same model and target); a completed one "
        "tunes the tasks skipped in it before a measurement",
    )
    tune.add_argument(
        "--memory",
        action="append",
        metavar="STORE",
        help="also draw on the tunes in this records database (read-only; repeatable)",
    )
    tune.add_argument(
        "--no-memory", action="store_true", help="do not draw on earlier tunes of other models on this target"
    )
    tune.add_argument("--out", help="also export the tuned module here and check it")
    tune.add_argument("--no-check", action="store_true", help="with --out: skip the onnxruntime check")
    tune.set_defaults(func=cmd_tune)


def _add_bench_command(sub: Any) -> None:
    bench = sub.add_parser("bench", help="stock MetaSchedule vs BCD on the same models and budget")
    bench.add_argument("model", nargs="+")
    _add_model_options(bench)
    _add_tuning_options(bench, exclude=("strategy", *STOP_RULE_FIELDS))
    bench.add_argument(
        "--seeds", type=int, default=1, help="runs per strategy and model (seeds 0..N-1); 2 or more write a matrix"
    )
    bench.add_argument(
        "--strategies",
        default="bcd",
        help="strategies to compare with stock MetaSchedule, comma-separated (bcd, the default)",
    )
    bench.add_argument(
        "--memory",
        action="append",
        metavar="STORE",
        help="BCD draws on the tunes in this records database (stock stays cold; repeatable)",
    )
    bench.add_argument("--out", help="folder for stores, timelines, plot, JSON (default runs/bench-MODEL)")
    bench.add_argument("--runs", type=int, default=RUNS, help="timed runs for each measured latency")
    bench.set_defaults(func=cmd_bench, strategy=TUNE_DEFAULTS.strategy)  # --strategies picks


def _add_export_command(sub: Any) -> None:
    export = sub.add_parser("export", help="compile the tuned model from the records into a shared library")
    export.add_argument("--db", required=True)
    export.add_argument("--out", required=True)
    export.add_argument("--session", type=int, help="session id (default: the newest tune, not a layout probe)")
    export.add_argument("--model", help="the ONNX file, if it moved since tuning")
    export.add_argument("--no-check", action="store_true", help="skip the check against onnxruntime")
    export.add_argument("--runs", type=int, default=RUNS, help="timed runs for each latency")
    export.set_defaults(func=cmd_export)


def _add_report_command(sub: Any) -> None:
    report = sub.add_parser("report", help="write a session's HTML report with plots, and CSV/JSON records")
    report.add_argument("--db", required=True)
    report.add_argument("--out", required=True, help="folder for report.html, trials.csv, tasks.csv, report.json")
    report.add_argument("--session", type=int, help="session id (default: the newest tune, not a layout probe)")
    report.set_defaults(func=cmd_report)


def _add_check_and_run_commands(sub: Any) -> None:
    for name, compare, text in (
        ("check", True, "run a compiled module and compare it with onnxruntime"),
        ("run", False, "run a compiled module on random input and time it"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("module")
        cmd.add_argument("--onnx", required=True, help="the ONNX model (inputs, and the reference outputs)")
        cmd.add_argument("--input-shape", action="append", metavar="NAME=D1,D2,...")
        cmd.add_argument("--runs", type=int, default=RUNS, help="timed runs for each latency")
        cmd.add_argument(
            "--tolerance",
            type=float,
            help="error allowed in a float output, relative to its largest value or 1, whichever is larger "
            "(default 1e-3; 1e-2 for float16 outputs)",
        )
        cmd.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
        cmd.set_defaults(func=lambda a, compare=compare: cmd_check(a, compare))


def _add_db_command(sub: Any) -> None:
    db = sub.add_parser("db", help="records database utilities")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    for name, text in (
        ("import-json", "add a MetaSchedule JSON database's records"),
        ("export-json", "write the records as a MetaSchedule JSON database"),
    ):
        cmd = db_sub.add_parser(name, help=text)
        cmd.add_argument("--db", required=True)
        cmd.add_argument("directory", help="folder with database_workload.json and database_tuning_record.json")
    sessions = db_sub.add_parser("sessions", help="list the sessions in a store")
    sessions.add_argument("--db", required=True)
    tasks = db_sub.add_parser("tasks", help="list a session's tasks: index, name, cluster, status, trials")
    tasks.add_argument("--db", required=True)
    tasks.add_argument("--session", type=int, help="session id (default: the newest tune, not a layout probe)")
    db.set_defaults(func=cmd_db)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bcd", description=__doc__)
    parser.add_argument("--version", action="version", version=f"bcd {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: TVM's too)")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_inspect_command(sub)
    _add_tune_command(sub)
    _add_bench_command(sub)
    _add_export_command(sub)
    _add_report_command(sub)
    _add_check_and_run_commands(sub)
    _add_db_command(sub)
    add_steer_command(sub)
    return parser


def configure_logging(verbosity: int) -> None:
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("bcd").setLevel(logging.INFO if verbosity else logging.WARNING)
    tvm_level = logging.INFO if verbosity >= 2 else logging.WARNING
    logging.getLogger("bcd.ms").setLevel(tvm_level)
    logging.getLogger("tvm").setLevel(tvm_level)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside this handler, not in Python's exit
        return code
    except BcdError as err:
        print(f"bcd: error: {err}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as err:  # damage past what opening a store checks (readers skip the full check)
        store = getattr(args, "db", None) or "the records database"
        print(f"bcd: error: {store} is damaged ({err}); restore it from a backup, or use another --db", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `bcd inspect MODEL | head`: the reader left, as with any Unix tool
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's flush at exit does not raise a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    raise SystemExit(main())
