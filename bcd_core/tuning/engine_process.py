"""The tuning engine as a process of its own, for front ends that must outlive it or survive
it (the dashboard): `python -m bcd_core.tuning.engine_process LAUNCH.json`.

It runs exactly what `bcd tune` runs (`run_session`), with the launch's settings and the
steering requests made before it started; everything else it reports through the store, which
any process reads (progress) and writes (control requests, tuning/channel.py). It writes its
log to its stdout, which the launcher points at a file: it must not die of a closed pipe when
its launcher is killed. Exit status 0: the session ended (completed or stopped); 2: the
tune could not run (the log's last line says why).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.tuning.control import ControlRequest, RequestKind, TuningControl
from bcd_core.tuning.settings import TuneSettings

ENGINE_NICENESS = 10  # the engine yields the CPU to the window that shows it (nice 5 left stalls of 144 ms)
LOG_TAIL_CHARS = 2000


@dataclass
class EngineLaunch:
    """Everything one engine process needs; written as JSON next to its log."""

    model_path: str
    db_path: str
    target_spec: str
    settings: dict[str, Any]
    new_session: bool = False
    resume_session_id: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)  # made before it started
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    niceness: int = ENGINE_NICENESS

    @classmethod
    def of(
        cls,
        model_path: str | Path,
        db_path: str | Path,
        target_spec: str,
        settings: TuneSettings,
        new_session: bool = False,
        resume_session_id: int | None = None,
        requests: list[ControlRequest] | None = None,
    ) -> EngineLaunch:
        return cls(
            str(Path(model_path).resolve()),
            str(Path(db_path).resolve()),
            target_spec,
            asdict(settings),
            new_session,
            resume_session_id,
            [{"kind": str(r.kind), "args": r.args} for r in requests or []],
        )


class EngineProcess:
    """A launched engine: its process, its log file and the token that finds its session."""

    def __init__(self, launch: EngineLaunch, work_dir: str | Path) -> None:
        self.launch = launch
        folder = Path(work_dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.launch_path = folder / f"engine-{launch.token}.json"
        self.log_path = folder / f"engine-{launch.token}.log"
        self.launch_path.write_text(json.dumps(asdict(launch), indent=1))
        with open(self.log_path, "wb") as log_file:
            # A session of its own: the launcher's death (or Ctrl+C in its terminal) does not
            # reach the engine; only a stop request through the store ends it early.
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bcd_core.tuning.engine_process", str(self.launch_path)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        """None while it runs."""
        return self.process.poll()

    def wait(self, timeout_s: float) -> bool:
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def remove_files(self) -> None:
        """The launch file and log of an engine that ended well: nothing to read in them."""
        for path in (self.launch_path, self.log_path):
            path.unlink(missing_ok=True)

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-LOG_TAIL_CHARS:]

    def failure(self) -> BcdError:
        """What went wrong, from the log: its last error line, or its tail."""
        tail = self.log_tail().strip().splitlines()
        errors = [line for line in tail if line.startswith("error:")]
        reason = errors[-1].removeprefix("error:").strip() if errors else "\n".join(tail[-8:])
        code = self.exit_code()
        how = f"exited with status {code}" if code is not None and code >= 0 else f"was killed (signal {-(code or 0)})"
        return BcdError(f"the tuning engine {how}: {reason or 'no log'} (log: {self.log_path})")


def run_launch(launch: EngineLaunch) -> int:
    from bcd_core.target import parse_target
    from bcd_core.tuning.tune import run_session

    control = TuningControl()
    for request in launch.requests:
        control.submit(ControlRequest(RequestKind(request["kind"]), request["args"]))
    run_session(
        launch.model_path,
        launch.db_path,
        parse_target(launch.target_spec),
        TuneSettings(**launch.settings),
        (),
        launch.new_session,
        control,
        launch.resume_session_id,
        engine_token=launch.token,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout, level=logging.INFO)
    logging.getLogger("tvm").setLevel(logging.WARNING)
    logging.getLogger("bcd.ms").setLevel(logging.WARNING)
    try:
        launch = EngineLaunch(**json.loads(Path(args[0]).read_text()))
        os.nice(launch.niceness)
        return run_launch(launch)
    except (BcdError, ValueError, OSError, IndexError) as err:
        print(f"error: {err}", flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
