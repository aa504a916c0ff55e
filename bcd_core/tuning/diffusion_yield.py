"""What diffusion has earned in a cluster, against what the search's own picks earned there.

A batch that improves a task's best latency credits the relative improvement to the origin
of its fastest program: diffused (from the cluster or the memory) or the task's own search.
Per trial, the two yields say whether the slots diffusion takes in a cluster's rounds pay:
where diffused programs earn less than the search's picks (a transformer's dense
projections of different widths, whose programs do not carry over), they shrink to a probe,
so a wrong guess costs the cluster a few trials rather than a quarter of every member's
rounds; where they earn more (the convolutions of a CNN), they keep their share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class DiffusionYield:
    """Trials and summed relative improvements of one cluster's later rounds (a task's first
    round is left out: its picks are a fresh sample, and the task has no best to improve)."""

    carried_trials: int = 0
    carried_gain: float = 0.0
    own_trials: int = 0
    own_gain: float = 0.0

    def record(self, batch: Iterable[tuple[float, bool]], best_before: float) -> None:
        """Count one batch of (latency, carried) pairs (latency inf when it failed), measured
        for a task whose best latency was `best_before`."""
        pairs = list(batch)
        if not pairs or not math.isfinite(best_before):
            return
        carried = sum(1 for _, is_carried in pairs if is_carried)
        self.carried_trials += carried
        self.own_trials += len(pairs) - carried
        fastest, fastest_carried = min(pairs, key=lambda pair: pair[0])
        if fastest < best_before:
            gain = (best_before - fastest) / best_before
            if fastest_carried:
                self.carried_gain += gain
            else:
                self.own_gain += gain

    def diffusion_lags(self, evidence: int) -> bool:
        """Whether diffused programs, once at least `evidence` of them were measured, earned
        less per trial than the search's own picks. Ties (often both nothing) keep diffusion."""
        if self.carried_trials < max(evidence, 1) or not self.own_trials:
            return False
        return self.carried_gain / self.carried_trials < self.own_gain / self.own_trials
