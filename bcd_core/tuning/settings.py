"""Tuning settings shared by every strategy, with defaults sized for small machines.

Which values an option takes, and whether it names a session, come from options.py's table."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from bcd_core.cores import kernel_threads as current_kernel_threads
from bcd_core.records.timing import TVM_DEFAULT_THREADS
from bcd_core.tuning.options import (
    AUTO_LAYOUT,
    BCD,
    CLUSTER_MODES,
    MATH_MODES,
    OPTIONS,
    OPTIONS_BY_FIELD,
    RETIRED_STRATEGIES,
    STOCK,
    identity_fields,
    settled_identity,
)

DEFAULT_CLUSTER_MODE = CLUSTER_MODES[0]
DEFAULT_MATH = MATH_MODES[0]

# Identity keys added after sessions of a strategy were stored, with the value such a session
# ran with (not today's default): it resumes with that value, and a tune that asks for that
# value finds it (find_session_to_continue).
IDENTITY_ADDED_LATER: dict[str, dict[str, Any]] = {
    BCD: {
        "search_seeds": "all",
        "member_first_round": "full",
        "math": "exact",
        "cpu_cache": "warm",
        "serial_twins": "off",
        "memory_first_round": "after",
        "kernel_threads": TVM_DEFAULT_THREADS,
        "conv_layout": "nchw",
    },
    STOCK: {"math": "exact", "cpu_cache": "warm", "kernel_threads": TVM_DEFAULT_THREADS, "conv_layout": "nchw"},
}
CPU_BUILDER_TIMEOUT_S = 10.0
LAYOUT_VARIABLE = "BCD_LAYOUT"


def default_layout() -> str:
    """How convolutions are laid out unless a tune says: measured per model ("auto"), or what
    BCD_LAYOUT names (a team that pins one layout; the test suite, whose tests other than the
    layout's own must not depend on what this CPU measures)."""
    return os.environ.get(LAYOUT_VARIABLE, AUTO_LAYOUT)


GPU_BUILDER_TIMEOUT_S = 60.0
MIN_POPULATION = 32
POPULATION_PER_CANDIDATE = 8


@dataclass
class TuneSettings:
    strategy: str = BCD
    trials_per_task: int = 32
    trials_per_round: int = 16  # candidates measured per batch ("round")
    # Sketch clusters only hold tasks whose design spaces match, so every member can be
    # diffused; loose-sketch also lets a task whose epilogue inlines other element-wise blocks
    # (a residual add, a GELU) take a cluster-mate's programs: larger clusters in models with
    # such epilogues, the same clusters as sketch elsewhere. Operator clusters mix e.g. 1x1 and
    # 3x3 convolutions, which then fall back to the search alone.
    cluster_mode: str = DEFAULT_CLUSTER_MODE
    seed: int = 0
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    # How erf, exp, tanh, sigmoid and softmax are imported (model_import.MathMode): TVM's vectorized
    # approximations ("fast") or libm's calls ("exact"); export checks the outputs either way.
    math: str = DEFAULT_MATH
    # Threads TVM runs kernels on in this process (bcd_core/cores.py); records timed on other
    # thread counts do not compare (records/timing.py).
    kernel_threads: int = field(default_factory=current_kernel_threads)
    # Convolutions in the model's layout or in NCHW[x]c (bcd_core/layout.py); the tasks differ,
    # so tuning, inspection and export of one session must use the same.
    conv_layout: str = field(default_factory=default_layout)
    layout_probe: bool = False  # this tune only measures its layout (tuning/layout_choice.py)
    # The share of a round's candidates that may be programs diffused from other tasks of the
    # cluster or the tuning memory, in place of the search's lowest-ranked picks; 0 turns
    # diffusion off (stock MetaSchedule's search with BCD's scheduling and first rounds).
    diffusion_share: float = 0.25
    # When the tune stops before its trials are spent (tuning/stopping.py); not part of a
    # session's identity, so the same command with other rules resumes the same session. 0 (None
    # for the onnxruntime margin, where 0 means "as fast as") leaves a rule off.
    minutes: float = 0.0
    target_ms: float = 0.0
    faster_than_onnxruntime_pct: float | None = None
    plateau_pct: float = 0.0
    plateau_minutes: float = 5.0
    # Search and measurement knobs (not part of a session's identity).
    population_size: int = 128
    init_min_unmeasured: int = 32
    # None: by target (builder_timeout_for). A CPU candidate whose LLVM build takes longer than
    # 10 s is an extreme unroll, not a contender, and the whole round waits for it; GPU builds
    # also run NVRTC/nvcc.
    builder_timeout_s: float | None = None
    runner_timeout_s: float = 30.0
    runner_number: int = 3
    runner_repeat: int = 1
    runner_min_repeat_ms: int = 20
    # Where candidates run. Not part of the identity either, so a session started locally can
    # be resumed on remote servers (and back). Builds always stay on this machine.
    runner: str = "local"
    tracker: str = ""  # HOST:PORT of `python -m tvm.exec.rpc_tracker`, for runner "rpc"
    tracker_key: str = ""  # the --key the RPC servers registered with at that tracker

    def __post_init__(self) -> None:
        if self.strategy in RETIRED_STRATEGIES:
            raise ValueError(f"the {self.strategy} strategy is retired: {RETIRED_STRATEGIES[self.strategy]}")
        for option in OPTIONS:
            value = getattr(self, option.field)
            if option.choices and value not in option.choices:
                name = option.field.replace("_", " ")
                raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(option.choices)}")
        if self.trials_per_task < 1:
            raise ValueError("trials per task must be at least 1")
        if self.trials_per_round < 1:
            raise ValueError("trials per round must be at least 1")
        if not 0 <= self.diffusion_share <= 0.5:
            raise ValueError("the diffusion share must be between 0 (off) and 0.5 of a round")
        self._check_stop_rules()
        if self.builder_timeout_s is not None and self.builder_timeout_s <= 0:
            raise ValueError("the builder timeout must be a positive number of seconds")
        if self.runner == "rpc":
            self._check_rpc()

    def _check_stop_rules(self) -> None:
        for name in ("minutes", "target_ms", "plateau_pct"):
            if getattr(self, name) < 0:
                raise ValueError(f"{OPTIONS_BY_FIELD[name].flag} must be 0 (off) or more")
        margin = self.faster_than_onnxruntime_pct
        if margin is not None and not 0 <= margin < 100:
            raise ValueError("--faster-than-onnxruntime is a margin in percent: 0 (as fast) up to 99")
        if self.plateau_minutes <= 0:
            raise ValueError("--plateau-minutes must be more than 0")

    def _check_rpc(self) -> None:
        if not self.tracker.strip():
            raise ValueError(
                "the rpc runner needs the tracker's address: --tracker HOST:PORT "
                "(where `python -m tvm.exec.rpc_tracker` listens)"
            )
        parse_tracker_address(self.tracker)
        if not self.tracker_key.strip():
            raise ValueError(
                "the rpc runner needs the servers' device key: --key KEY "
                "(as in `python -m tvm.exec.rpc_server --tracker HOST:PORT --key KEY`)"
            )

    def builder_timeout_for(self, gpu: bool) -> float:
        if self.builder_timeout_s is not None:
            return self.builder_timeout_s
        return GPU_BUILDER_TIMEOUT_S if gpu else CPU_BUILDER_TIMEOUT_S

    @property
    def batch_size(self) -> int:
        return min(self.trials_per_round, self.trials_per_task)

    @property
    def search_population(self) -> tuple[int, int]:
        """The evolutionary search's population and its least number of fresh samples for rounds
        of `trials_per_round`. An evolution costs about the same per member whatever a round
        measures (45 ms a member on 2 cores, most of a small round's time), so a round of a few
        candidates evolves 8 per candidate, as MetaSchedule's own defaults do (512 for rounds
        of 64), and never fewer than 32; rounds of 16 or more keep the full `population_size`."""
        population = min(self.population_size, max(MIN_POPULATION, POPULATION_PER_CANDIDATE * self.trials_per_round))
        fresh = max(1, self.init_min_unmeasured * population // self.population_size)
        return population, fresh

    def identity(self) -> dict[str, Any]:
        """What makes two runs 'the same session' (so a re-run resumes it): options.py's table,
        with the settled choices as sessions record them."""
        data = asdict(self)
        probe = {"layout_probe": True} if self.layout_probe else {}
        return {**{k: data[k] for k in identity_fields(self.strategy)}, **settled_identity(self.strategy), **probe}

    def identities_to_find(self) -> list[dict[str, Any]]:
        """This identity, then as sessions stored before some of its keys existed would hold
        it (only keys whose value is what such sessions ran with may be missing), fewest
        missing first."""
        identity = self.identity()
        added = IDENTITY_ADDED_LATER.get(self.strategy, {})
        droppable = [k for k, before in added.items() if k in identity and identity[k] == before]
        found = [identity]
        for size in range(1, len(droppable) + 1):
            for dropped in combinations(droppable, size):
                found.append({k: v for k, v in identity.items() if k not in dropped})
        return found


def parse_tracker_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' (or '[IPv6]:PORT') -> (host, port); ValueError with the fix otherwise."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip().removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(
            f"tracker address {text!r} is not HOST:PORT; give it as e.g. --tracker 192.168.1.10:9190 "
            "(the host and --port of `python -m tvm.exec.rpc_tracker`)"
        )
    return host, int(port_text)
