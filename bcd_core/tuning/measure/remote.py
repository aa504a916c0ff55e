"""Measuring candidates on other machines through TVM's own RPC tracker.

Builds stay on this machine (LocalBuilder with our build function); MetaSchedule's
RPCRunner uploads each built module to a server the tracker hands out for the key and times
it there. Everything here fails with a one-line BcdError before tuning starts, rather than
hanging in the first batch: TVM's client waits forever in the tracker's queue for a key that
no server has.
"""

from __future__ import annotations

import math
import socket
import threading
from typing import Any

from tvm import rpc
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms
from tvm.support.popen_pool import PopenPoolExecutor

from bcd_core.errors import BcdError
from bcd_core.tuning.measure.arguments import remote_arguments
from bcd_core.tuning.settings import TuneSettings, parse_tracker_address

CONNECT_TIMEOUT_S = 5.0  # reaching the tracker's port; a LAN answers in milliseconds
SUMMARY_TIMEOUT_S = 10.0  # the tracker's handshake and summary
# Candidates measured at once, one per server: each server runs one session at a time.
MAX_PARALLEL_MEASUREMENTS = 8
# Beyond the session timeout (which the server enforces), time for the tracker hand-out,
# the upload and linking the module on the server, before a silent server counts as lost.
MEASURE_SLACK_S = 30.0


def servers_for_key(summary: dict[str, Any], key: str) -> int:
    """Servers registered at the tracker with `key` (busy or free)."""
    # Each server's entry is keyed "server:KEY" (clients have no "server" prefix).
    return sum(1 for item in summary.get("server_info", []) if item.get("key", "").split(":", 1)[-1] == key)


def _tracker_summary(host: str, port: int) -> dict[str, Any]:
    address = f"{host}:{port}"
    try:  # a plain connect first: TVM's own client retries a refused port for a minute
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise BcdError(
            f"cannot reach the RPC tracker at {address} ({reason}); start it there with "
            f"`python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port {port}` or fix --tracker"
        ) from err
    result: dict[str, Any] = {}

    def ask() -> None:  # in a thread: a port that is not a tracker may never answer
        try:
            result["summary"] = rpc.connect_tracker(host, port).summary()
        except Exception as err:  # reported below as "not a tracker"
            result["error"] = err

    asker = threading.Thread(target=ask, name="bcd-tracker-check", daemon=True)
    asker.start()
    asker.join(SUMMARY_TIMEOUT_S)
    if "summary" not in result:
        detail = f": {result['error']}" if "error" in result else f" within {SUMMARY_TIMEOUT_S:g} s"
        raise BcdError(
            f"{address} does not answer as a TVM RPC tracker{detail}; check --tracker "
            "(it is the host and --port of `python -m tvm.exec.rpc_tracker`)"
        )
    return result["summary"]


def check_tracker(settings: TuneSettings) -> int:
    """The number of servers registered for the key; BcdError if there is none."""
    host, port = parse_tracker_address(settings.tracker)
    key = settings.tracker_key
    summary = _tracker_summary(host, port)
    servers = servers_for_key(summary, key)
    if servers == 0:
        keys = sorted({item.get("key", "").split(":", 1)[-1] for item in summary.get("server_info", [])})
        known = ", ".join(keys) if keys else "none"
        raise BcdError(
            f"no RPC server is registered with key {key!r} at the tracker {host}:{port} (keys there: {known}); "
            f"start one on each device with `python -m tvm.exec.rpc_server --tracker {host}:{port} --key {key}`"
        )
    return servers


def create_session_or_fail(rpc_config: ms.runner.RPCConfig) -> rpc.RPCSession:
    """TVM's default session set-up, except that it fails at once when no server with the key
    is left (they all died) instead of waiting in the tracker's queue: the candidate is then
    recorded as a run error and the tune goes on. Runs in the runner's worker processes."""
    rpc_config.count_num_servers(allow_missing=False)
    return rpc_config.connect_server()


@derived_object
class TrackerRunner(ms.runner.RPCRunner._cls):  # TVM's documented way to extend RPCRunner
    """MetaSchedule's RPCRunner with a bound on each measurement.

    RPCRunner's worker pool has no timeout, so a server that vanishes without closing its
    connection (power cut, network partition) would hang the tune; with one, the candidate
    becomes a "timeout" run error.
    """

    def __init__(self, settings: TuneSettings, evaluator: ms.runner.EvaluatorConfig, servers: int) -> None:
        host, port = parse_tracker_address(settings.tracker)
        workers = max(1, min(servers, MAX_PARALLEL_MEASUREMENTS))
        session_timeout_s = math.ceil(settings.runner_timeout_s)
        super().__init__(
            rpc_config=ms.runner.RPCConfig(
                tracker_host=host,
                tracker_port=port,
                tracker_key=settings.tracker_key,
                session_timeout_sec=session_timeout_s,
            ),
            evaluator_config=evaluator,
            f_create_session=create_session_or_fail,
            f_alloc_argument=remote_arguments,
            max_workers=workers,
        )
        # Workers start lazily, so the replaced pool never started a process.
        self.pool.shutdown(wait=False)
        self.pool = PopenPoolExecutor(max_workers=workers, timeout=session_timeout_s + MEASURE_SLACK_S)

    def _sanity_check(self) -> None:
        # RPCRunner's check only resolves session functions given by name, in a worker
        # process it starts just for that; ours is a plain function, so skip the extra start.
        pass


def make_rpc_runner(settings: TuneSettings, evaluator: ms.runner.EvaluatorConfig) -> ms.runner.Runner:
    return TrackerRunner(settings, evaluator, check_tracker(settings))
