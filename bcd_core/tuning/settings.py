"""Tuning settings shared by every strategy, with defaults sized for small machines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

STRATEGIES = ("metaschedule", "bcd")


@dataclass
class TuneSettings:
    strategy: str = "bcd"
    trials_per_task: int = 32
    trials_per_round: int = 16  # candidates measured per batch ("round")
    # Sketch clusters only hold tasks whose design spaces match, so every member can be
    # diffused; operator clusters mix e.g. 1x1 and 3x3 convolutions, which then fall back.
    cluster_mode: str = "sketch"
    seed: int = 0
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    # Search and measurement knobs (not part of a session's identity).
    population_size: int = 128
    init_min_unmeasured: int = 32
    builder_timeout_s: float = 30.0
    runner_timeout_s: float = 30.0
    runner_number: int = 3
    runner_repeat: int = 1
    runner_min_repeat_ms: int = 20
    # BCD (bcd-algorithm.md): prior size, generations of a member's search, rounds cap.
    prior_top_k: int = 2
    member_generations: int = 2
    representative_round_cap: int = 10

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if self.trials_per_task < 1:
            raise ValueError("trials per task must be at least 1")
        if self.trials_per_round < 1:
            raise ValueError("trials per round must be at least 1")
        if self.cluster_mode not in ("operator", "sketch"):
            raise ValueError("cluster mode must be 'operator' or 'sketch'")

    @property
    def batch_size(self) -> int:
        return min(self.trials_per_round, self.trials_per_task)

    def identity(self) -> dict[str, Any]:
        """What makes two runs 'the same session' (so a re-run resumes it)."""
        keys = ("strategy", "trials_per_task", "trials_per_round", "cluster_mode", "seed", "input_shapes")
        if self.strategy == "bcd":
            keys += ("prior_top_k", "member_generations", "representative_round_cap")
        data = asdict(self)
        return {k: data[k] for k in keys}
