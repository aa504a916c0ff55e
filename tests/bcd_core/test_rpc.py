"""Remote measurement through TVM's own RPC tracker and servers, all on loopback (real TVM).

A tracker and two servers run as subprocesses on free ports; every one of them (with the
processes it forks) is killed by the fixture's finalizer.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from tvm import rpc
from tvm.s_tir import meta_schedule as ms

from bcd_core import cli
from bcd_core.records.store import RecordStore
from bcd_core.tuning.events import RoundFinished, SessionFinished
from bcd_core.tuning.measure import remote
from bcd_core.tuning.settings import TuneSettings
from bcd_core.tuning.tune import run_session

LOOPBACK = "127.0.0.1"
KEY = "bcd-test"
START_TIMEOUT_S = 120.0  # three fresh Pythons importing TVM on 2 busy cores
STOP_TIMEOUT_S = 10.0
CANDIDATE_LIBRARY = "tvm_tmp_mod"  # in the name of the library a session loads


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


class RpcCluster:
    """A tracker and its servers, started here, each in its own process group."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen] = []
        self.servers: list[subprocess.Popen] = []
        self.tracker_port = free_port()
        self._spawn(
            "tracker",
            ["tvm.exec.rpc_tracker", "--host", LOOPBACK, "--port", str(self.tracker_port)]
            + ["--port-end", str(self.tracker_port + 1)],
        )

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.tracker_port}"

    def _spawn(self, name: str, module_args: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
        process = subprocess.Popen(
            [sys.executable, "-m", *module_args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group: servers fork a process per session
        )
        log.close()
        self.processes.append(process)
        return process

    def add_server(self) -> subprocess.Popen:
        port = free_port()
        server = self._spawn(
            f"server{len(self.servers)}",
            ["tvm.exec.rpc_server", "--tracker", self.address, "--key", KEY, "--host", LOOPBACK]
            + ["--port", str(port), "--port-end", str(port + 1)],
        )
        self.servers.append(server)
        return server

    def servers_registered(self) -> int:
        return remote.servers_for_key(rpc.connect_tracker(LOOPBACK, self.tracker_port).summary(), KEY)

    def wait_for_servers(self, count: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            dead = [p for p in self.processes if p.poll() is not None]
            assert not dead, f"an RPC process exited at start-up: {self.logs()}"
            try:
                if self.servers_registered() == count:
                    return
            except (OSError, RuntimeError):  # the tracker is still starting
                pass
            time.sleep(0.5)
        pytest.fail(f"{count} RPC servers did not register within {START_TIMEOUT_S:g} s: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in self.log_dir.glob("*.log"))

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait(timeout=STOP_TIMEOUT_S)

    def stop(self) -> None:
        for process in self.processes:
            self.kill(process)


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> RpcCluster:
    rpc_cluster = RpcCluster(tmp_path_factory.mktemp("rpc"))
    request.addfinalizer(rpc_cluster.stop)  # registered first: runs even if start-up fails
    rpc_cluster.add_server()
    rpc_cluster.add_server()
    rpc_cluster.wait_for_servers(2)
    return rpc_cluster


class ServerKiller(threading.Thread):
    """Watches the servers' sessions (each is a process the server forks) and kills the victim
    server, process group and all, once its `kill_at`-th session (or a later one) has loaded
    its candidate: a server that dies in the middle of measuring a candidate.

    Killing a session any earlier is not a failure to test: a session that dies while it is
    being set up makes TVM's tracker client retry on another server, so no candidate fails.
    Once the candidate's library is loaded, the result is at least `min_repeat_ms` away.
    """

    POLL_S = 0.01

    def __init__(self, servers: list[subprocess.Popen], victim: int, kill_at: int) -> None:
        super().__init__(name="server-killer", daemon=True)
        self.servers = servers
        self.victim = victim
        self.kill_at = kill_at
        self.sessions: list[tuple[int, float]] = []  # (server index, monotonic time first seen)
        self.killed_at: float | None = None
        self.finish = threading.Event()
        # `python -m tvm.exec.rpc_server` runs its loop in a worker process, which forks one
        # process per session (that one runs the compiler and more: only direct children count).
        self._loops = [psutil.Process(s.pid).children() for s in servers]
        self._seen: set[int] = set()

    def _session_pids(self, index: int) -> set[int]:
        pids = set()
        for loop in self._loops[index]:
            try:
                pids |= {child.pid for child in loop.children()}
            except psutil.NoSuchProcess:
                pass
        return pids

    @staticmethod
    def _has_loaded_candidate(pid: int) -> bool:
        """Whether the session has loaded the uploaded candidate (MetaSchedule's builder names
        it tvm_tmp_mod.tar; the server links it into a .so next to it and loads that)."""
        try:
            return CANDIDATE_LIBRARY in Path(f"/proc/{pid}/maps").read_text()
        except OSError:  # the session ended meanwhile
            return False

    def run(self) -> None:
        while not self.finish.is_set():
            for index, server in enumerate(self.servers):
                if server.poll() is not None:
                    continue
                for pid in self._session_pids(index) - self._seen:
                    self._seen.add(pid)
                    self.sessions.append((index, time.monotonic()))
                started_here = sum(1 for i, _ in self.sessions if i == self.victim)
                if index == self.victim and self.killed_at is None and started_here >= self.kill_at:
                    if any(self._has_loaded_candidate(pid) for pid in self._session_pids(index)):
                        RpcCluster.kill(server)
                        self.killed_at = time.monotonic()
            time.sleep(self.POLL_S)

    def sessions_after_kill(self, server: int) -> int:
        assert self.killed_at is not None
        return sum(1 for i, t in self.sessions if i == server and t > self.killed_at)


def rpc_args(model: Path, db: Path, *extra: str) -> list[str]:
    return ["tune", str(model), "--strategy", "metaschedule", "--db", str(db), *extra]


@pytest.mark.slow
def test_tune_goes_on_when_a_server_dies_mid_run(cluster: RpcCluster, tiny_mlp: Path, tmp_path: Path, host) -> None:
    args = cli.build_parser().parse_args(
        rpc_args(tiny_mlp, tmp_path / "rpc.db", "--trials-per-task", "4", "--trials-per-round", "2")
        + ["--runner", "rpc", "--tracker", cluster.address, "--key", KEY]
    )
    # Longer runs (about 0.1 s each) so the victim is surely measuring when it is killed; a
    # smaller search population, because this tests measurement, not search, on 2 cores.
    settings = replace(cli.settings_from_args(args), runner_min_repeat_ms=100, population_size=32)
    assert settings.runner == "rpc" and settings.tracker == cluster.address and settings.tracker_key == KEY
    killer = ServerKiller(cluster.servers, victim=0, kill_at=2)  # after its first candidate
    events: list[object] = []
    finished_at: dict[int, float] = {}  # round -> monotonic time it was recorded

    def listen(event: object) -> None:
        events.append(event)
        if isinstance(event, RoundFinished):
            finished_at[event.round] = time.monotonic()

    killer.start()
    try:
        run = run_session(tiny_mlp, args.db, host, settings, [listen])
    finally:
        killer.finish.set()
        killer.join(timeout=STOP_TIMEOUT_S)

    assert killer.killed_at is not None, f"server 0 never ran {killer.kill_at} sessions: {killer.sessions}"
    assert cluster.servers[0].poll() is not None and cluster.servers_registered() == 1
    final = events[-1]
    assert isinstance(final, SessionFinished) and final.status == "completed"
    store = RecordStore(args.db)
    trials = store.trials(run.session_id)
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    # Every candidate is recorded, the one that was on the dying server included.
    assert len(trials) == sum(e.batch_size for e in rounds) == final.trials_done >= run.trials_total
    failed = [t for t in trials if t["error"]]
    assert failed, "the candidate measured by the killed server is recorded as a run error"
    assert all(t["latency_s"] is None and t["error"].startswith("run: RPCRunner") for t in failed)
    # The other server measured the rest. Sessions started before the kill (the killed one
    # aside) account for at most that many measured latencies: the others were measured after
    # it, by the only server left, in rounds recorded after it.
    measured = [t for t in trials if t["latency_s"] is not None]
    assert all(t["latency_s"] > 0 for t in measured)
    started_before_kill = sum(1 for _, t in killer.sessions if t <= killer.killed_at)
    assert killer.sessions_after_kill(server=1) >= 2
    assert len(measured) - (started_before_kill - 1) >= 2
    later_rounds = {r for r, t in finished_at.items() if t > killer.killed_at}
    assert any(t["round"] in later_rounds for t in measured)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code and the error: the single `bcd: error:` line, with no traceback."""
    code = cli.main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("bcd: error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return code, errors[0]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--runner", "rpc", "--tracker", "no-port-here", "--key", KEY], "is not HOST:PORT"),
        (["--runner", "rpc", "--tracker", "127.0.0.1:http", "--key", KEY], "is not HOST:PORT"),
        (["--runner", "rpc", "--tracker", "127.0.0.1:70000", "--key", KEY], "is not HOST:PORT"),
        (["--runner", "rpc", "--key", KEY], "needs the tracker's address: --tracker HOST:PORT"),
        (["--runner", "rpc", "--tracker", "127.0.0.1:9190"], "needs the servers' device key: --key KEY"),
        (["--tracker", "127.0.0.1:9190", "--key", KEY], "add --runner rpc"),
    ],
)
def test_malformed_remote_options_are_one_line_errors(
    options: list[str], expected: str, tiny_mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(rpc_args(tiny_mlp, tmp_path / "x.db", *options), capsys)
    assert code == 2 and expected in err
    assert not (tmp_path / "x.db").exists(), "rejected before any session is created"


def test_unreachable_tracker_fails_fast(tiny_mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    address = f"{LOOPBACK}:{free_port()}"  # nothing listens there
    started = time.monotonic()
    argv = rpc_args(tiny_mlp, tmp_path / "x.db", "--runner", "rpc", "--tracker", address, "--key", KEY)
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert f"cannot reach the RPC tracker at {address}" in err and "python -m tvm.exec.rpc_tracker" in err
    assert time.monotonic() - started < remote.CONNECT_TIMEOUT_S + 5
    assert not (tmp_path / "x.db").exists()


def test_port_that_is_not_a_tracker(
    tiny_mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "SUMMARY_TIMEOUT_S", 1.0)
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind((LOOPBACK, 0))
        silent.listen()
        address = f"{LOOPBACK}:{silent.getsockname()[1]}"
        code, err = run_cli(
            rpc_args(tiny_mlp, tmp_path / "x.db", "--runner", "rpc", "--tracker", address, "--key", KEY), capsys
        )
    assert code == 2 and f"{address} does not answer as a TVM RPC tracker" in err


def test_key_without_servers(
    cluster: RpcCluster, tiny_mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = rpc_args(tiny_mlp, tmp_path / "x.db", "--runner", "rpc", "--tracker", cluster.address, "--key", "nobody")
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert f"no RPC server is registered with key 'nobody' at the tracker {cluster.address}" in err
    assert f"keys there: {KEY}" in err and "--key nobody" in err
    assert not (tmp_path / "x.db").exists()


def test_measuring_fails_at_once_when_no_server_is_left(cluster: RpcCluster) -> None:
    """Mid-tune, with every server for the key gone, each candidate becomes a run error at
    once instead of waiting in the tracker's queue forever (TVM's default)."""
    config = ms.runner.RPCConfig(LOOPBACK, cluster.tracker_port, "nobody", session_timeout_sec=5)
    started = time.monotonic()
    with pytest.raises(ValueError, match="Unable to find servers with the specific key"):
        remote.create_session_or_fail(config)
    assert time.monotonic() - started < 5


def test_where_candidates_run_is_not_part_of_a_session() -> None:
    """A session tuned locally is found again (and resumed) when measured remotely."""
    local = TuneSettings(strategy="metaschedule", trials_per_task=4)
    remote_settings = replace(local, runner="rpc", tracker="10.0.0.2:9190", tracker_key="rasp4")
    assert remote_settings.identity() == local.identity()
    assert replace(local, trials_per_task=5).identity() != local.identity()
