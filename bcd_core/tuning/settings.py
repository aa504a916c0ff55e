"""Tuning settings shared by every strategy, with defaults sized for small machines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from bcd_core.cores import kernel_threads as current_kernel_threads
from bcd_core.records.timing import TVM_DEFAULT_THREADS
from bcd_core.tuning.options import (
    CLUSTER_MODES,
    CPU_CACHE_MODES,
    FIRST_ROUNDS,
    LATE_COST_MODELS,
    MATH_MODES,
    MEMBER_FIRST_ROUNDS,
    MEMORY_FIRST_ROUNDS,
    PHASED,
    PRIOR_SOURCES,
    REPRESENTATIVE_RULES,
    RUNNERS,
    SEARCH_SEEDS,
    SEEDED,
    SERIAL_TWINS,
    STOCK,
    STRATEGIES,
    identity_fields,
)

DEFAULT_CLUSTER_MODE = CLUSTER_MODES[0]
DEFAULT_REPRESENTATIVE_RULE = REPRESENTATIVE_RULES[0]
DEFAULT_MATH = MATH_MODES[0]
DEFAULT_CPU_CACHE = CPU_CACHE_MODES[0]
# "auto" diffuses from the whole cluster when the model has a (not minor) cluster of at least
# this many tasks, from the representative otherwise: cluster priors pay off in clusters of a
# dozen or so tasks, and cost more than they bring in clusters of a few.
AUTO_CLUSTER_PRIORS_MIN_TASKS = 8
# Identity keys added after sessions of a strategy were stored, with the value such a session
# ran with (not today's default): it resumes with that value, and a tune that asks for that
# value finds it (TuningRun._open_session).
IDENTITY_ADDED_LATER: dict[str, dict[str, Any]] = {
    SEEDED: {
        "search_seeds": "all",
        "member_first_round": "full",
        "math": "exact",
        "cpu_cache": "warm",
        "serial_twins": "off",
        "memory_first_round": "after",
        "kernel_threads": TVM_DEFAULT_THREADS,
    },
    PHASED: {
        "representative_rule": "similar",
        "split_heavier_than": 0.0,
        "prior_source": "representative",
        "late_cost_model": "shared",
        "math": "exact",
        "cpu_cache": "warm",
        "kernel_threads": TVM_DEFAULT_THREADS,
    },
    STOCK: {"math": "exact", "cpu_cache": "warm", "kernel_threads": TVM_DEFAULT_THREADS},
}
IDENTITY_BEFORE_KEYS = IDENTITY_ADDED_LATER[PHASED]
CPU_BUILDER_TIMEOUT_S = 10.0
GPU_BUILDER_TIMEOUT_S = 60.0


@dataclass
class TuneSettings:
    strategy: str = "bcd"
    trials_per_task: int = 32
    trials_per_round: int = 16  # candidates measured per batch ("round")
    # Sketch clusters only hold tasks whose design spaces match, so every member can be
    # diffused; operator clusters mix e.g. 1x1 and 3x3 convolutions, which then fall back.
    # loose-sketch also lets a task whose epilogue inlines other element-wise blocks (a
    # residual add, a GELU) take a cluster-mate's programs: larger clusters, so more diffusion,
    # in models with such epilogues, and the same clusters as sketch in models without.
    cluster_mode: str = DEFAULT_CLUSTER_MODE
    # Which task of a cluster is tuned first and diffused from: bcd-algorithm.md's most
    # similar to the others ("similar"), or the one with the most work ("heaviest").
    representative_rule: str = DEFAULT_REPRESENTATIVE_RULE
    # A member with more than this many times its representative's work (FLOPs x weight) is
    # tuned as a singleton instead (0: never): a member with many times its representative's
    # work (a classifier convolution beside a 1x1 one) can carry a large share of the model's
    # latency, and programs diffused from a far lighter task suit it poorly.
    split_heavier_than: float = 0.0
    seed: int = 0
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    # How erf, exp, tanh and softmax are imported (model_import.MathMode): "fast" made the
    # shared transformers' compiled models 16-23 % faster on a CPU (docs/benchmarks.md); the
    # export check still compares the outputs with onnxruntime's.
    math: str = DEFAULT_MATH
    # How candidates are timed on a CPU (tuning/cache_flush.py): "warm" as stock does; "flushed"
    # times what a kernel costs inside the model, where its weights come cold from memory. Its
    # estimates match the compiled models (0.95-1.04x on MobileNetV2 and SqueezeNet, against
    # 1.04-1.29x warm), but the models it tunes are no faster and each trial costs 3-9 % more
    # (docs/benchmarks.md), so warm stays the default.
    cpu_cache: str = DEFAULT_CPU_CACHE
    # Threads TVM runs kernels on in this process (bcd_core/cores.py); records timed on other
    # thread counts do not compare (records/timing.py).
    kernel_threads: int = field(default_factory=current_kernel_threads)
    # Search and measurement knobs (not part of a session's identity).
    population_size: int = 128
    init_min_unmeasured: int = 32
    # None: by target (see builder_timeout_for). A CPU candidate whose LLVM build takes longer
    # than 10 s is an extreme unroll, not a contender, and the whole round waits for it (a
    # 30 s limit can cost a task with such candidates a minute per round); GPU builds also
    # run NVRTC/nvcc.
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
    # BCD (bcd-algorithm.md): prior size, generations of a member's search, rounds cap.
    # A member's diffusion round takes one program from each of the top-k: 8 comes closer to
    # the members' final programs than 2 or 4.
    prior_top_k: int = 8
    # Whose programs a task's diffusion draws on: every other task's of its cluster, ranked by
    # time per FLOP ("cluster"), or its representative's only ("representative",
    # bcd-algorithm.md); "auto" (the default) picks by the model's largest cluster
    # (AUTO_CLUSTER_PRIORS_MIN_TASKS). With "cluster", a program one task finds that beats another's best
    # per FLOP is diffused into it (the representative too, after its phase 1), so one
    # task's lucky find reaches the others instead of each member staying in its
    # representative's basin, where a poor representative holds back every member.
    prior_source: str = PRIOR_SOURCES[0]
    member_generations: int = 2
    representative_round_cap: int = 10
    # A representative's phase 1 runs up to representative_round_cap rounds, whatever its
    # cluster's size, and ends after this many rounds in a row without a better program: a
    # fixed count gives a stalled representative of a light cluster many trials and cuts
    # short a heavy one that is still improving. 0 follows bcd-algorithm.md: always
    # min(|cluster|, 10) rounds.
    phase_one_patience: int = 3
    # Clusters whose share of the model's FLOPs x weight is below this (pooling, concatenation)
    # get one representative round and diffusion-only members: their rounds cost as much wall
    # time as a convolution's and gain nothing visible. 0 follows bcd-algorithm.md to the letter.
    minor_cluster_share: float = 0.01
    # Which model ranks a task's candidates in phase 3: "shared" (BCD's shared model
    # throughout) or "metaschedule" (MetaSchedule's XGBModel, trained on every task's
    # samples, once past its warm-up; bcd_core/cost_model/phased.py). "shared" stays the
    # default: switching models is not shown to improve the phased strategy's results.
    late_cost_model: str = "shared"
    # "bcd": the share of a round's candidates that may be programs diffused from other tasks
    # of the cluster, in place of the search's lowest-ranked picks. 0 turns diffusion off.
    diffusion_share: float = 0.25
    # "bcd": how a task's first round picks its candidates: "ranked" (fresh samples of its
    # design space ranked by the shared model, tuning/first_round.py), "stock"
    # (MetaSchedule's evolutionary search under the shared model, which has learnt from the
    # tasks measured before) or "cold" (that search under random scores until the task's own
    # first batch is back, as in stock MetaSchedule: cost_model/cold_task.py); "ranked-cold":
    # ranked's model picks, with the cold search's picks in place of its random ones.
    first_round: str = FIRST_ROUNDS[0]
    # "bcd": which measured programs seed a task's evolutionary search. "own": only what its own
    # search found, so a diffused program competes in its share of a round but never steers the
    # search (one that is merely good enough otherwise holds the search in its basin); "all":
    # every best record of the task, diffused ones included.
    search_seeds: str = SEARCH_SEEDS[0]
    # "bcd": how large the first round of a task that received diffused programs is. "half":
    # those programs and as many picks of its own, half a round, so the first round robin (and
    # with it the model's first full estimate) ends sooner and the gradient rule spends the
    # rest where it pays; "full": a whole round, as every other task; "by-work": half for a
    # task with less work (FLOPs x weight) than the model's average task, full for the others.
    # A heavy task whose cluster-mates' programs suit it poorly (a 3-channel first convolution)
    # found no good basin in 4 picks of its own, and its search stayed in the poor one: the
    # trials saved on the light tasks are most of the time saved, the heavy ones set the final.
    member_first_round: str = MEMBER_FIRST_ROUNDS[0]
    # "bcd": whether a task's batches carry serial twins of its programs (tuning/serial.py).
    serial_twins: str = SERIAL_TWINS[0]
    # "bcd": when a task whose cluster gives it programs draws on the tuning memory. "after":
    # only once its cluster-mates have too few programs faster than its own (a cluster's first
    # task and a remembered workload draw on it in their first round); "beside": in its first
    # round too, the memory's programs beside its cluster's, in place of own picks in a whole
    # round and on top of a half one; "swap": as beside, in place of all own picks but one
    # (memory_share.py, `MemoryShare.goes_beside`; seeded.py, `with_memory_beside`).
    memory_first_round: str = MEMORY_FIRST_ROUNDS[0]

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if self.trials_per_task < 1:
            raise ValueError("trials per task must be at least 1")
        if self.trials_per_round < 1:
            raise ValueError("trials per round must be at least 1")
        if self.prior_top_k < 1:
            raise ValueError("the prior needs at least one program (--prior-top-k 1 or more)")
        if self.phase_one_patience < 0:
            raise ValueError("phase-1 patience must be 0 (off) or a number of rounds (--phase-one-patience)")
        if self.late_cost_model not in LATE_COST_MODELS:
            raise ValueError(f"late cost model must be one of {', '.join(LATE_COST_MODELS)}")
        if self.prior_source not in PRIOR_SOURCES:
            raise ValueError(f"prior source must be one of {', '.join(PRIOR_SOURCES)}")
        if self.representative_rule not in REPRESENTATIVE_RULES:
            raise ValueError(f"representative rule must be one of {', '.join(REPRESENTATIVE_RULES)}")
        if self.split_heavier_than != 0 and self.split_heavier_than < 1:
            raise ValueError("--split-heavier-than must be 0 (off) or a ratio of 1 or more")
        if self.search_seeds not in SEARCH_SEEDS:
            raise ValueError(f"search seeds must be one of {', '.join(SEARCH_SEEDS)}")
        if self.first_round not in FIRST_ROUNDS:
            raise ValueError(f"first round must be one of {', '.join(FIRST_ROUNDS)}")
        if self.member_first_round not in MEMBER_FIRST_ROUNDS:
            raise ValueError(f"member first round must be one of {', '.join(MEMBER_FIRST_ROUNDS)}")
        if self.serial_twins not in SERIAL_TWINS:
            raise ValueError(f"serial twins must be one of {', '.join(SERIAL_TWINS)}")
        if self.memory_first_round not in MEMORY_FIRST_ROUNDS:
            raise ValueError(f"memory first round must be one of {', '.join(MEMORY_FIRST_ROUNDS)}")
        if not 0 <= self.diffusion_share <= 0.5:
            raise ValueError("the diffusion share must be between 0 (off) and 0.5 of a round")
        if self.math not in MATH_MODES:
            raise ValueError(f"math must be one of {', '.join(MATH_MODES)}")
        if self.cpu_cache not in CPU_CACHE_MODES:
            raise ValueError(f"cpu cache must be one of {', '.join(CPU_CACHE_MODES)}")
        if self.cluster_mode not in CLUSTER_MODES:
            raise ValueError(f"cluster mode must be one of {', '.join(CLUSTER_MODES)}")
        if self.builder_timeout_s is not None and self.builder_timeout_s <= 0:
            raise ValueError("the builder timeout must be a positive number of seconds")
        if self.runner not in RUNNERS:
            raise ValueError(f"unknown runner {self.runner!r}; choose one of {', '.join(RUNNERS)}")
        if self.runner == "rpc":
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

    def identity(self) -> dict[str, Any]:
        """What makes two runs 'the same session' (so a re-run resumes it): options.py's table."""
        data = asdict(self)
        return {k: data[k] for k in identity_fields(self.strategy)}

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
