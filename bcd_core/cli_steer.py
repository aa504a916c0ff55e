"""`bcd steer` and `bcd db tasks`: the dashboard's steering from a terminal, so a tune on a
server can be steered from a second one (tuning/steer_session.py does the work)."""

from __future__ import annotations

import argparse
from contextlib import closing
from typing import Any

from bcd_core.errors import BcdError

STEER_HELP = """\
Steer a tune through its records store, as the dashboard does. A running tune takes each
request at its next round boundary. With no --session, the session being tuned now.

A session no engine runs (stopped, interrupted, complete) can have its tasks skipped or
un-skipped and its budgets changed: resuming it (`bcd tune --resume ID`, or Resume in the
dashboard) tunes with them; un-skipping a task of a complete session, or raising its total
past what it measured, makes it resumable. pause, resume, stop, order, move and
representative need a running tune. TASK is a task's name or index, CLUSTER a cluster's key
or one of its tasks: `bcd db tasks --db STORE --session ID` lists them.
"""


def _common(defaults: Any) -> argparse.ArgumentParser:
    """--db and --session, accepted before the action and after it."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="STORE", default=defaults, help="the records database the tune writes")
    common.add_argument(
        "--session", type=int, metavar="ID", default=defaults, help="the session (default: the one tuned now)"
    )
    return common


def add_steer_command(sub: Any) -> None:
    steer = sub.add_parser(
        "steer",
        parents=[_common(None)],
        help="steer a tune (pause, skip, budgets...) through its records store, as the dashboard does",
        description=STEER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = steer.add_subparsers(dest="action", required=True, metavar="ACTION")
    after = [_common(argparse.SUPPRESS)]

    def action(name: str, text: str) -> argparse.ArgumentParser:
        return actions.add_parser(name, parents=after, help=text, description=text)

    for name, text in (
        ("pause", "pause after the batch in flight"),
        ("resume", "go on after a pause"),
        ("stop", "stop after the batch in flight (resumable; everything measured is saved)"),
    ):
        action(name, text)
    action("skip", "tune these tasks no further").add_argument("tasks", nargs="+", metavar="TASK")
    action("unskip", "tune skipped tasks again, within their budget").add_argument("tasks", nargs="+", metavar="TASK")
    budget = action("budget", "cap these tasks at TRIALS trials")
    budget.add_argument("tasks", nargs="+", metavar="TASK")
    budget.add_argument("trials", type=int, metavar="TRIALS")
    cluster_budget = action("cluster-budget", "cap every task of a cluster at TRIALS trials")
    cluster_budget.add_argument("clusters", nargs=1, metavar="CLUSTER")
    cluster_budget.add_argument("trials", type=int, metavar="TRIALS")
    action("total", "the session's total budget").add_argument("trials", type=int, metavar="TRIALS")
    action("order", "tune these clusters first, in this order (the others after)").add_argument(
        "clusters", nargs="+", metavar="CLUSTER"
    )
    move = action("move", "move a task to another cluster ('single': a cluster of its own)")
    move.add_argument("tasks", nargs=1, metavar="TASK")
    move.add_argument("clusters", nargs=1, metavar="CLUSTER")
    action("representative", "make a task its cluster's representative").add_argument("tasks", nargs=1, metavar="TASK")
    steer.set_defaults(func=cmd_steer)


def cmd_steer(args: argparse.Namespace) -> int:
    from bcd_core.records.store import RecordStore
    from bcd_core.tuning.steer_session import Action, SteerRequest, steer

    if not args.db:
        raise BcdError("bcd steer needs the tune's records database: --db STORE")
    request = SteerRequest(
        Action(args.action),
        tuple(getattr(args, "tasks", ())),
        tuple(getattr(args, "clusters", ())),
        getattr(args, "trials", None),
    )
    with closing(RecordStore(args.db, create=False)) as store:
        for line in steer(store, args.session, request):
            print(line)
    return 0


def task_table_rows(store: Any, session_id: int | None) -> tuple[dict[str, Any], list[list[Any]]]:
    """`bcd db tasks`: the session (default: the newest) and a row per task."""
    from bcd_core.formatting import format_latency
    from bcd_core.session_view import default_session, load_snapshot

    shown = store.session(session_id) if session_id is not None else default_session(store.sessions())
    if shown is None:
        raise BcdError(f"{store.path} holds no tuning session; run `bcd tune` first")
    snapshot = load_snapshot(store, shown["id"])
    rows = [
        [t.index, t.name, t.cluster_key, "yes" if t.is_representative else "", t.status, t.trials]
        + [t.cap if t.cap is not None else "", format_latency(t.best_s)]
        for t in sorted(snapshot.tasks, key=lambda t: t.index)
    ]
    return snapshot.session, rows


TASK_TABLE_HEADERS = ["index", "name", "cluster", "representative", "status", "trials", "cap", "best"]
