"""Every tuning option once: its flag, help, choices, who decides it, and whether it names a session.

`TuneSettings` (settings.py) holds the values and their defaults; this table says how each one
is offered and which values it takes. The command line (`add_tuning_options`), the dashboard's
Settings panel, `TuneSettings` validation and `TuneSettings.identity()` are generated from it, so
an option cannot be shown in one place and forgotten in another.

Levels: `user` options are in `bcd tune --help` and the Settings panel; `research` options are
accepted on the command line but hidden (docs/reference.md lists them); `internal` ones have no
flag (search and measurement constants a user never sets).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# "bcd": stock MetaSchedule's scheduler and search with Bayesian Code Diffusion added
# (tuning/bcd); "metaschedule": the stock baseline. The default first.
STRATEGIES = ("bcd", "metaschedule")
STOCK = "metaschedule"
BCD = "bcd"
CLUSTER_MODES = ("loose-sketch", "sketch", "operator")  # values of clustering.ClusterMode, default first
MATH_MODES = ("fast", "exact")  # values of model_import.MathMode, default first
# "auto": measured per model (tuning/layout_choice.py); the others are layout.LayoutMode values.
AUTO_LAYOUT = "auto"
LAYOUTS = (AUTO_LAYOUT, "nchw", "blocked", "winograd")
RUNNERS = ("local", "rpc")  # measure on this machine, or on servers behind TVM's RPC tracker
ALL_STRATEGIES = STRATEGIES
# Strategies earlier versions had, with what to use instead: their sessions stay in a store
# (export and the tuning memory still read their records), but they are not continued.
RETIRED_STRATEGIES = {
    "bcd-phased": "bcd, the default, reached stock MetaSchedule's latency sooner on every model both were "
    "measured on; tune with --strategy bcd",
}

# Choices that were options once and are settled: sessions still name them in their identity,
# so that a session stored while they were options is found, and resumed, only if it ran with
# the value the tuner now always uses.
SETTLED_IDENTITY: dict[str, tuple[Any, tuple[str, ...]]] = {
    "cpu_cache": ("warm", ALL_STRATEGIES),
    "first_round": ("ranked", (BCD,)),
    "search_seeds": ("own", (BCD,)),
    "member_first_round": ("by-work", (BCD,)),
    "serial_twins": ("on", (BCD,)),
    "memory_first_round": ("swap", (BCD,)),
}


class Level(StrEnum):
    USER = "user"
    RESEARCH = "research"
    INTERNAL = "internal"


@dataclass(frozen=True)
class Option:
    field: str  # the TuneSettings attribute
    level: Level
    help: str = ""
    flag: str = ""  # "" for internal options
    label: str = ""  # the Settings panel's caption (user options shown there)
    choices: tuple[str, ...] = ()
    type: type = str
    metavar: str | None = None
    # Strategies whose sessions differ when this option differs (a re-run with another value
    # starts a new session instead of resuming).
    identity_of: tuple[str, ...] = ()


# Identity options first, in the order sessions have always stored them.
OPTIONS: tuple[Option, ...] = (
    Option(
        "strategy",
        Level.USER,
        "bcd (the default: stock MetaSchedule with Bayesian Code Diffusion added) or metaschedule (stock)",
        "--strategy",
        "Strategy",
        choices=STRATEGIES,
        identity_of=ALL_STRATEGIES,
    ),
    Option(
        "trials_per_task",
        Level.USER,
        "budget = this x number of tasks",
        "--trials-per-task",
        "Trials per task",
        type=int,
        identity_of=ALL_STRATEGIES,
    ),
    Option(
        "trials_per_round",
        Level.USER,
        "candidates measured per batch; a task's first batch takes at most its trials per task",
        "--trials-per-round",
        "Measured per round",
        type=int,
        identity_of=ALL_STRATEGIES,
    ),
    Option(
        "cluster_mode",
        Level.RESEARCH,
        "how tasks are grouped: by sketch ignoring inlined element-wise epilogues (loose-sketch), "
        "by sketch, or by operator chain",
        "--cluster-mode",
        choices=CLUSTER_MODES,
        identity_of=ALL_STRATEGIES,
    ),
    Option("seed", Level.RESEARCH, "seed of the search", "--seed", type=int, identity_of=ALL_STRATEGIES),
    # Parsed by the command (NAME=D1,D2,... pairs), so it has no flag of its own here.
    Option("input_shapes", Level.USER, identity_of=ALL_STRATEGIES),
    Option(
        "math",
        Level.USER,
        "erf, exp, tanh, sigmoid and softmax as TVM's vectorized approximations (fast, the default; the export "
        "check compares the outputs with onnxruntime's) or as libm's functions (exact)",
        "--math",
        choices=MATH_MODES,
        identity_of=ALL_STRATEGIES,
    ),
    Option("kernel_threads", Level.INTERNAL, identity_of=ALL_STRATEGIES),
    # A short tune that measures a layout for tuning/layout_choice.py: named in the identity
    # only when set (TuneSettings.identity), so no user's tune continues one.
    Option("layout_probe", Level.INTERNAL),
    Option(
        "conv_layout",
        Level.RESEARCH,
        "convolutions in the layout measured to tune faster on this machine (auto), in the model's own NCHW "
        "layout, blocked: NCHW[x]c with x the CPU target's float32 vector width (8 with AVX2, 16 with "
        "AVX-512), weights packed at compile time, or winograd: blocked, with 3x3 stride-1 convolutions by "
        "Winograd F(4x4, 3x3)",
        "--layout",
        choices=LAYOUTS,
        identity_of=ALL_STRATEGIES,
    ),
    Option(
        "diffusion_share",
        Level.RESEARCH,
        "share of a round's candidates that may be diffused programs (0 turns diffusion off)",
        "--diffusion-share",
        type=float,
        identity_of=(BCD,),
    ),
    # Stopping rules (tuning/stopping.py): not part of a session's identity either.
    Option(
        "minutes",
        Level.USER,
        "stop after this many minutes (pauses not counted; 0: no limit); the same command again "
        "resumes with the time left",
        "--minutes",
        "Time budget (min)",
        type=float,
        metavar="N",
    ),
    Option(
        "target_ms",
        Level.USER,
        "stop once the compiled model, timed, runs in this many milliseconds or less (0: off)",
        "--target-ms",
        "Stop at (ms)",
        type=float,
        metavar="MS",
    ),
    Option(
        "faster_than_onnxruntime_pct",
        Level.USER,
        "stop once the compiled model, timed, is this many percent faster than onnxruntime on this machine "
        "(0: as fast)",
        "--faster-than-onnxruntime",
        "Beat onnxruntime (%)",
        type=float,
        metavar="PERCENT",
    ),
    Option(
        "plateau_pct",
        Level.USER,
        "stop once the estimate improved less than this many percent over the last 5 minutes (0: off)",
        "--plateau",
        "Plateau stop (%)",
        type=float,
        metavar="PERCENT",
    ),
    Option(
        "plateau_minutes",
        Level.RESEARCH,
        "the window --plateau looks back over (default 5)",
        "--plateau-minutes",
        type=float,
        metavar="N",
    ),
    # Where and how candidates are measured: not part of a session's identity, so a session
    # started locally can be resumed on remote servers (and back).
    Option(
        "runner",
        Level.USER,
        "where candidates are timed (builds stay here)",
        "--runner",
        "Runner",
        choices=RUNNERS,
    ),
    Option(
        "tracker",
        Level.USER,
        "with --runner rpc: the `python -m tvm.exec.rpc_tracker` to ask",
        "--tracker",
        "Tracker",
        metavar="HOST:PORT",
    ),
    Option(
        "tracker_key",
        Level.USER,
        "with --runner rpc: the device key the RPC servers registered",
        "--key",
        "Device key",
        metavar="KEY",
    ),
    Option(
        "builder_timeout_s",
        Level.RESEARCH,
        "give up on a candidate whose build takes longer (default 10 for CPUs, 60 for GPUs)",
        "--builder-timeout",
        type=float,
        metavar="SECONDS",
    ),
    Option("population_size", Level.INTERNAL),
    Option("init_min_unmeasured", Level.INTERNAL),
    Option("runner_timeout_s", Level.INTERNAL),
    Option("runner_number", Level.INTERNAL),
    Option("runner_repeat", Level.INTERNAL),
    Option("runner_min_repeat_ms", Level.INTERNAL),
)

OPTIONS_BY_FIELD = {option.field: option for option in OPTIONS}
# A race (`bcd bench`) spends both sides' whole trial budgets: these are for tunes only.
STOP_RULE_FIELDS = ("minutes", "target_ms", "faster_than_onnxruntime_pct", "plateau_pct", "plateau_minutes")


def identity_fields(strategy: str) -> tuple[str, ...]:
    """The settings that name a session of `strategy`, in their stored order."""
    return tuple(o.field for o in OPTIONS if strategy in o.identity_of)


def settled_identity(strategy: str) -> dict[str, Any]:
    """What a session of `strategy` records for the settled choices (SETTLED_IDENTITY)."""
    return {name: value for name, (value, strategies) in SETTLED_IDENTITY.items() if strategy in strategies}


def flagged_options(level: Level | None = None) -> tuple[Option, ...]:
    """Options with a command-line flag, optionally only those of one level."""
    return tuple(o for o in OPTIONS if o.flag and (level is None or o.level == level))


def panel_options() -> tuple[Option, ...]:
    """User options the Settings panel shows, in table order."""
    return tuple(o for o in OPTIONS if o.level == Level.USER and o.label)
