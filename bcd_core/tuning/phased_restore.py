"""bcd-phased on resume: what the plan knew when the session stopped, read back from the store."""

from __future__ import annotations

from bcd_core.records.states import TrialOrigin


class PlanRestore:
    """Restores BcdPlan's diffusion state from the session's stored trials and tasks. A mixin
    of BcdPlan: it reads the plan's run, clusters and priors, and fills its dictionaries."""

    def _restore_from_store(self) -> None:
        """On resume: which members were diffused already, and from which programs."""
        index_of_row = {row_id: index for index, row_id in self.run.task_row_ids.items()}
        for trial in self.run.store.trials(self.run.session_id):
            if trial["origin"] == TrialOrigin.DIFFUSED and trial["source_trial_id"] is not None:
                index = index_of_row[trial["task_id"]]
                self.diffused_from.setdefault(index, set()).add(trial["source_trial_id"])
        for row in self.run.store.tasks(self.run.session_id):
            if row["fallback"]:
                self.diffused_from.setdefault(row["idx"], set())
                self.fallbacks.add(row["idx"])

    def _restore_phase_one_cuts(self) -> None:
        """On resume: a representative short of its phase-1 rounds whose members were diffused
        already had its phase 1 cut; a better program found since (phase 3) must not reopen it."""
        if not self.settings.phase_one_patience:
            return
        for cluster in self.clusters:
            if any(member in self.diffused_from for member in cluster.followers()):
                self.phase_one_cut.add(cluster.representative)

    def _restore_representative_best_at_diffusion(self) -> None:
        """On resume: each member's representative's best latency when the member last
        received programs (its latest diffused batch), so that a representative that improved
        since still earns the member a refresh round (`refresh_improvement`)."""
        trials = self.run.store.trials(self.run.session_id)  # in the order they were measured
        index_of_row = {row_id: index for index, row_id in self.run.task_row_ids.items()}
        latest: dict[int, tuple[int, int]] = {}  # member -> (round, first trial id) of its last diffusion
        measured: dict[int, list[tuple[int, float]]] = {}  # task index -> (trial id, latency)
        for trial in trials:
            index = index_of_row.get(trial["task_id"])
            if index is None:
                continue
            if trial["latency_s"] is not None:
                measured.setdefault(index, []).append((trial["id"], trial["latency_s"]))
            if trial["origin"] == TrialOrigin.DIFFUSED and (index not in latest or latest[index][0] != trial["round"]):
                latest[index] = (trial["round"], trial["id"])
        tasks = self.run.tasks
        for member, (_, first_id) in latest.items():
            cluster = self.cluster_of(member)
            if cluster.size < 2 or (member == cluster.representative and not self.cluster_priors):
                continue
            scale = 1.0
            before = []
            for source in self.prior_sources(member):
                if self.cluster_priors:  # per FLOP, scaled to the member (source_best)
                    scale = max(tasks[member].flops, 1.0) / max(tasks[source].flops, 1.0)
                before += [latency * scale for trial_id, latency in measured.get(source, []) if trial_id < first_id]
            if before:
                self.representative_best_at_diffusion[member] = min(before)
