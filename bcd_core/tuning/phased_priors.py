"""bcd-phased's priors: which measured programs are diffused into a task, and when."""

from __future__ import annotations

from functools import cached_property

import tvm_ffi
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.schedule import Trace

from bcd_core.clustering import Cluster, cluster_tasks
from bcd_core.diffusion import diffuse
from bcd_core.records.states import EventKind, TaskStatus, TrialOrigin
from bcd_core.tuning.options import PriorSource
from bcd_core.tuning.priors import MIN_IMPROVEMENT, distinct_programs, faster_per_flop
from bcd_core.tuning.settings import AUTO_CLUSTER_PRIORS_MIN_TASKS


class PlanPriors:
    """A mixin of BcdPlan: the programs a member (or, with cluster priors, any task) draws on,
    whether it should receive them now, and the diffused candidates themselves. The schedule
    (bcd.py) decides when a task runs; this decides what it is seeded with."""

    # -- the prior ------------------------------------------------------------------------
    def prior(self, representative: int) -> list[tuple[int, Trace]]:
        """Top-k distinct measured programs of the representative (refreshed every call)."""
        run = self.run
        rows = run.database.top_rows(run.workload_ids[representative], 8 * self.settings.prior_top_k)
        return distinct_programs(run, rows, self.settings.prior_top_k)

    @property
    def cluster_priors(self) -> bool:
        source = self.settings.prior_source
        if source == PriorSource.AUTO:
            return self.largest_cluster_size >= AUTO_CLUSTER_PRIORS_MIN_TASKS
        return source == PriorSource.CLUSTER

    def announce_prior_source(self) -> None:
        if self.settings.prior_source == PriorSource.AUTO:
            chosen = "the whole cluster" if self.cluster_priors else "the representative"
            self.run.message(
                EventKind.INFO,
                f"prior source auto: diffusing from {chosen} (the largest cluster with 1 % of the work or more has "
                f"{self.largest_cluster_size} tasks; {AUTO_CLUSTER_PRIORS_MIN_TASKS} or more diffuse from the whole "
                "cluster)",
            )

    @cached_property  # fixed for the session, and asked for whenever a prior is
    def largest_cluster_size(self) -> int:
        """Tasks in the model's largest cluster that is not minor (reshapes and the like can be
        many, with no work). Of the model's own clustering (no user moves, no splits): so that
        "auto" means one thing for a session from its start to its resume."""
        own = cluster_tasks(self.run.tasks, self.settings.cluster_mode)
        return max((cluster.size for cluster in own if not self.is_minor(cluster)), default=0)

    def prior_sources(self, task_index: int) -> list[int]:
        """The tasks whose programs are diffused into `task_index`: its representative, or
        with prior source "cluster" every other task of its cluster."""
        cluster = self.cluster_of(task_index)
        if self.cluster_priors:
            return [m for m in cluster.members if m != task_index]
        return [cluster.representative]

    def prior_for(self, task_index: int) -> list[tuple[int, Trace]]:
        """The programs diffused into `task_index` next. From several sources, the top-k by
        time per FLOP (tasks of one cluster differ in size), only those faster per FLOP than
        the task's own best: the others would not beat what it has."""
        sources = self.prior_sources(task_index)
        if not self.cluster_priors:
            return self.prior(sources[0])
        return faster_per_flop(self.run, task_index, sources, self.settings.prior_top_k)

    def source_best(self, task_index: int) -> float | None:
        """The best of the programs `task_index` draws on: its representative's best latency,
        or with cluster priors the best time per FLOP among its sources, scaled to its FLOPs."""
        run = self.run
        if not self.cluster_priors:
            return run.best.get(self.cluster_of(task_index).representative)
        flops = max(run.tasks[task_index].flops, 1.0)
        scaled = [
            run.best[s] * flops / max(run.tasks[s].flops, 1.0) for s in self.prior_sources(task_index) if s in run.best
        ]
        return min(scaled, default=None)

    def refresh_improvement(self, task_index: int) -> float:
        """A member's representative's relative improvement since the member's last diffusion
        (with cluster priors: its sources', per FLOP)."""
        if not self.receives_diffusion(task_index):
            return 0.0
        then = self.representative_best_at_diffusion.get(task_index)
        now = self.source_best(task_index)
        if then is None or now is None or task_index in self.fallbacks or not then > now:
            return 0.0
        return (then - now) / then

    # -- diffusion ------------------------------------------------------------------------
    def receives_diffusion(self, task_index: int) -> bool:
        """A member does; with cluster priors, so does a representative past its phase 1."""
        cluster = self.cluster_of(task_index)
        if cluster.size < 2:
            return False
        if task_index != cluster.representative:
            return True
        return self.cluster_priors and self.in_phase_three(task_index)

    def diffusion_batch(self, task_index: int, count: int) -> list[ms.MeasureCandidate] | None:
        """Diffused candidates for a task that needs them now, else None."""
        cluster = self.cluster_of(task_index)
        if not self.receives_diffusion(task_index):
            return None
        is_member = task_index != cluster.representative
        received = self.diffused_from.get(task_index)
        if self.cluster_priors and received is not None and self.refresh_improvement(task_index) < MIN_IMPROVEMENT:
            # Its sources have not got better since its last diffusion: search instead. Per
            # FLOP, some tasks are slower whatever their programs (a first convolution with 3
            # input channels); without this they would take every new program of a faster
            # one and never search on their own.
            return None
        priors = self.prior_for(task_index)
        if received is not None:
            priors = [p for p in priors if p[0] not in received]  # refresh: only new best programs
            if not priors:
                return None
        elif not priors:
            return None  # the representative has no valid program yet: plain search
        context = self.run.contexts[task_index]
        sketches = self.sketches[task_index]
        seed = self.settings.seed * 7919 + task_index * 101 + self.run.round
        # One program from each prior program before a second adaptation of any: which of the
        # representative's programs suits a member's shape varies a lot.
        result = diffuse(context, sketches, priors, count, seed, seen=set(), spread=True)
        self.diffused_from.setdefault(task_index, set()).update(p[0] for p in priors)
        source_best = self.source_best(task_index)
        if source_best is not None:
            self.representative_best_at_diffusion[task_index] = source_best
        if result.matched_sketch is None:
            if is_member and received is None:
                self.fallback(task_index, cluster)
            return None
        if received is None and is_member:  # first diffusion: the seeded round searches the matched sketch only
            self.searches[task_index].restrict_to(result.matched_sketch)
        for program in result.programs:
            key = int(tvm_ffi.structural_hash(program.schedule.mod))
            self.run.provenance[key] = (TrialOrigin.DIFFUSED, program.source_trial_id, program.adaptation)
        if not result.programs:
            self.run.message(
                EventKind.WARNING,
                f"{self.run.tasks[task_index].name}: every diffused program was invalid "
                f"({result.rejected} rejected); searching from scratch in the matched sketch",
                task_index,
            )
            return None
        return [program.candidate() for program in result.programs]

    def fallback(self, task_index: int, cluster: Cluster) -> None:
        task = self.run.tasks[task_index]
        rep = self.run.tasks[cluster.representative]
        self.fallbacks.add(task_index)
        self.run.store.update_task(self.run.task_row_ids[task_index], fallback=1, status=TaskStatus.FALLBACK)
        self.searches[task_index].search_full_space()
        self.run.message(
            EventKind.FALLBACK,
            f"{task.name}: no sketch matches the prior of {rep.name}; searching its full design space",
            task_index,
        )
