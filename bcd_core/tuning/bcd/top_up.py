"""The rest of each task's first round, in a tune that continues its layout probe.

A layout probe measures a short first round of every task (tuning/layout_choice.py), and the
winning probe's session becomes the tune. Were those short rounds the tasks' first, every
later trial would come from an evolved round, which costs about twice a ranked first round's
trial (an evolution samples, mutates and scores a population four times; a first round
samples and scores once), and a tune with the layout fixed measures most of a small budget
in first rounds. So a task whose only round is the probe's gets the rest of a first round
(first_round.py: the cost model's best of a fresh sample, half at random, its cluster's
programs beside them) before the gradient rule hands out evolved rounds: the tune's first
round robin is then the one a tune with the layout fixed runs, with the probe's trials in it.
"""

from __future__ import annotations

from bcd_core.tuning.bcd.first_round import module_hash
from bcd_core.tuning.run import TuningRun


def probe_only_tasks(run: TuningRun) -> set[int]:
    """The tasks to top up: in a tune that continues a layout probe, those whose one round is
    the probe's and measured fewer trials than a round of the tune. A resumed tune finds the
    tasks it had not topped up yet; a task the probe did not measure (a reused workload) has a
    whole first round of its own."""
    probe_trials = run.session.get("probe_trials")
    if run.settings.layout_probe or not probe_trials:
        return set()
    probed_rows = {trial["task_id"] for trial in run.store.trials(run.session_id)[:probe_trials]}
    whole = run.settings.batch_size
    return {
        index
        for index, row_id in run.task_row_ids.items()
        if row_id in probed_rows and run.rounds_per_task.get(index) == 1 and run.trial_counts.get(index, 0) < whole
    }


def top_up_size(run: TuningRun, task_index: int) -> int:
    """Trials that make the probe's round of a task a whole round of the tune."""
    return max(run.settings.batch_size - run.trial_counts.get(task_index, 0), 0)


def probed_programs(run: TuningRun, task_index: int) -> set[int]:
    """Module hashes of the programs the session measured for the task (its probe's round):
    the top-up's fresh sample skips them, as a search skips what it measured. A run hands out
    each program once (the plan's `seen`), but starts with nothing seen, and on a task with a
    small design space the cost model ranks the probe's picks first again."""
    hashes = set()
    for row in run.store.trials(run.session_id, task_id=run.task_row_ids[task_index]):
        try:
            hashes.add(module_hash(run.database.candidate_from_row(row).sch))
        except Exception:  # a trace this TVM cannot replay: nothing to skip
            continue
    return hashes
