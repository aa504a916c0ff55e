"""Every tuning option once: its flag, help, who decides it, and whether it names a session.

`TuneSettings` (settings.py) holds the values and their defaults; this table says how each
one is offered. The command line (`add_tuning_options`), the dashboard's Settings panel and
`TuneSettings.identity()` are generated from it, so an option cannot be shown in one place
and forgotten in another.

Levels: `user` options are in `bcd tune --help` and the Settings panel; `research` options
are accepted on the command line but hidden, documented in experiments/README.md; `internal`
ones have no flag (search and measurement constants a user never sets).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# "bcd": stock MetaSchedule's scheduler and search, with diffused programs added (seeded.py);
# "bcd-phased": bcd-algorithm.md's phased schedule (bcd.py), kept to compare with;
# "metaschedule": the stock baseline. The default first.
STRATEGIES = ("bcd", "bcd-phased", "metaschedule")
STOCK = "metaschedule"
SEEDED = "bcd"
PHASED = "bcd-phased"
CLUSTER_MODES = ("loose-sketch", "sketch", "operator")  # values of clustering.ClusterMode, default first
REPRESENTATIVE_RULES = ("similar", "heaviest")  # values of clustering.RepresentativeRule, default first
LATE_COST_MODELS = ("metaschedule", "shared")
FIRST_ROUNDS = ("ranked", "stock", "cold", "by-work", "ranked-cold")  # the default first
SEARCH_SEEDS = ("own", "all")  # the default first
MEMBER_FIRST_ROUNDS = ("by-work", "half", "full", "plus")  # the default first
SERIAL_TWINS = ("on", "off")  # the default first
MEMORY_FIRST_ROUNDS = ("swap", "after", "beside")  # the default first
MATH_MODES = ("fast", "exact")  # values of model_import.MathMode, default first
CPU_CACHE_MODES = ("warm", "flushed")  # how CPU candidates are timed (tuning/cache_flush.py), default first
RUNNERS = ("local", "rpc")  # measure on this machine, or on servers behind TVM's RPC tracker


class PriorSource(StrEnum):
    """bcd-phased: whose programs are diffused into a task (the default first)."""

    AUTO = "auto"  # the cluster's when the model has a large cluster, else the representative's
    CLUSTER = "cluster"  # every other task of its cluster, faster per FLOP than its own best
    REPRESENTATIVE = "representative"  # its representative's (bcd-algorithm.md)


PRIOR_SOURCES = tuple(PriorSource)


class Level(StrEnum):
    USER = "user"
    RESEARCH = "research"
    INTERNAL = "internal"


ALL_STRATEGIES = STRATEGIES


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
        "bcd (the default: stock MetaSchedule with diffused programs added), bcd-phased (the paper's "
        "phased schedule), or metaschedule (stock)",
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
        "candidates measured per batch",
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
        "erf, exp, tanh and softmax as TVM's vectorized approximations (fast, the default; the export "
        "check compares the outputs with onnxruntime's) or as libm's functions (exact)",
        "--math",
        choices=MATH_MODES,
        identity_of=ALL_STRATEGIES,
    ),
    Option(
        "cpu_cache",
        Level.RESEARCH,
        "how candidates are timed on a CPU: calls repeated with warm caches as stock MetaSchedule "
        "does (warm, the default), or each run with its weights and output flushed from the caches, "
        "as inside a model (flushed)",
        "--cpu-cache",
        choices=CPU_CACHE_MODES,
        identity_of=ALL_STRATEGIES,
    ),
    Option("kernel_threads", Level.INTERNAL, identity_of=ALL_STRATEGIES),
    Option(
        "diffusion_share",
        Level.RESEARCH,
        "share of a round's candidates that may be diffused programs (0 turns diffusion off)",
        "--diffusion-share",
        type=float,
        identity_of=(SEEDED,),
    ),
    Option(
        "first_round",
        Level.RESEARCH,
        "how a task's first round picks candidates: ranked fresh samples, stock's evolutionary search under the "
        "shared model, that search under random scores until the task has measurements (cold, as stock), or cold "
        "for tasks with more work than the average task and ranked for the others (by-work), or the shared model's "
        "best fresh samples beside stock's own first-round picks in place of random ones (ranked-cold)",
        "--first-round",
        choices=FIRST_ROUNDS,
        identity_of=(SEEDED,),
    ),
    Option(
        "search_seeds",
        Level.RESEARCH,
        "which measured programs seed a task's evolutionary search: only those its own search found "
        "(diffused programs compete in their share of a round without steering it), or all its best records",
        "--search-seeds",
        choices=SEARCH_SEEDS,
        identity_of=(SEEDED,),
    ),
    Option(
        "member_first_round",
        Level.RESEARCH,
        "size of the first round of a task that received programs from its cluster or the tuning memory: "
        "half a round (its diffused programs and as many picks of its own), a full one, or by work "
        "(half for a task with less work than the model's average task, full for the others), or plus "
        "(as by work, but the heavier tasks measure a whole round of their own picks and the diffused programs on top)",
        "--member-first-round",
        choices=MEMBER_FIRST_ROUNDS,
        identity_of=(SEEDED,),
    ),
    Option(
        "serial_twins",
        Level.RESEARCH,
        "whether a task's batches may carry the serial twin of one of its programs (the same program on "
        "one thread), until twins stop winning",
        "--serial-twins",
        choices=SERIAL_TWINS,
        identity_of=(SEEDED,),
    ),
    Option(
        "memory_first_round",
        Level.RESEARCH,
        "when a task whose cluster gives it programs draws on the tuning memory: in its first round too, "
        "beside its cluster's, in place of own picks (swap) or on top of a half round (beside), or only once "
        "its cluster-mates have too few (after)",
        "--memory-first-round",
        choices=MEMORY_FIRST_ROUNDS,
        identity_of=(SEEDED,),
    ),
    Option(
        "prior_top_k",
        Level.RESEARCH,
        "prior programs a member's diffusion draws on",
        "--prior-top-k",
        type=int,
        metavar="K",
        identity_of=(PHASED,),
    ),
    Option("member_generations", Level.INTERNAL, identity_of=(PHASED,)),
    Option("representative_round_cap", Level.INTERNAL, identity_of=(PHASED,)),
    Option("minor_cluster_share", Level.INTERNAL, identity_of=(PHASED,)),
    Option(
        "phase_one_patience",
        Level.RESEARCH,
        "rounds without a better program that end a representative's phase 1 (0: the paper's rule)",
        "--phase-one-patience",
        type=int,
        metavar="N",
        identity_of=(PHASED,),
    ),
    Option(
        "representative_rule",
        Level.RESEARCH,
        "the task tuned first in each cluster",
        "--representative",
        choices=REPRESENTATIVE_RULES,
        identity_of=(PHASED,),
    ),
    Option(
        "split_heavier_than",
        Level.RESEARCH,
        "a member with RATIO times its representative's work is tuned alone (0: never)",
        "--split-heavier-than",
        type=float,
        metavar="RATIO",
        identity_of=(PHASED,),
    ),
    Option(
        "prior_source",
        Level.RESEARCH,
        "whose programs are diffused into a member",
        "--prior-source",
        choices=PRIOR_SOURCES,
        identity_of=(PHASED,),
    ),
    Option(
        "late_cost_model",
        Level.RESEARCH,
        "which model ranks phase-3 candidates",
        "--late-cost-model",
        choices=LATE_COST_MODELS,
        identity_of=(PHASED,),
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


def identity_fields(strategy: str) -> tuple[str, ...]:
    """The settings that name a session of `strategy`, in their stored order."""
    return tuple(o.field for o in OPTIONS if strategy in o.identity_of)


def flagged_options(level: Level | None = None) -> tuple[Option, ...]:
    """Options with a command-line flag, optionally only those of one level."""
    return tuple(o for o in OPTIONS if o.flag and (level is None or o.level == level))


def panel_options() -> tuple[Option, ...]:
    """User options the Settings panel shows, in table order."""
    return tuple(o for o in OPTIONS if o.level == Level.USER and o.label)
