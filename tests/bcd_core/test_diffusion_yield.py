"""What diffusion earned in a cluster against the search's own picks, and the plan's use of
it: where diffused programs earn less per trial, a later round carries only one (a probe)."""

import math
from types import SimpleNamespace

from bcd_core.clustering import Cluster
from bcd_core.tuning.diffusion_yield import DiffusionYield
from bcd_core.tuning.seeded import SeededPlan
from bcd_core.tuning.settings import TuneSettings

INF = math.inf


def test_a_batch_credits_its_improvement_to_the_origin_of_its_fastest_program() -> None:
    ledger = DiffusionYield()
    ledger.record([(8.0, False), (6.0, True), (INF, True)], best_before=10.0)
    assert (ledger.carried_trials, ledger.own_trials) == (2, 1)
    assert ledger.carried_gain == 0.4 and ledger.own_gain == 0.0
    ledger.record([(5.0, False), (7.0, True)], best_before=6.0)
    assert ledger.own_gain == 1 / 6 and ledger.carried_gain == 0.4
    ledger.record([(9.0, False), (9.5, True)], best_before=5.0)  # no better program: no credit
    assert (ledger.carried_trials, ledger.own_trials) == (4, 3)
    assert (ledger.carried_gain, ledger.own_gain) == (0.4, 1 / 6)


def test_a_first_round_is_not_counted() -> None:
    ledger = DiffusionYield()
    ledger.record([(1.0, True), (2.0, False)], best_before=INF)
    ledger.record([], best_before=1.0)
    assert ledger == DiffusionYield()


def test_diffusion_lags_only_on_enough_evidence_and_a_lower_yield() -> None:
    ledger = DiffusionYield()
    ledger.record([(9.0, False), (12.0, True), (11.0, True)], best_before=10.0)
    assert not ledger.diffusion_lags(evidence=4)  # 2 diffused programs: too few to judge
    assert ledger.diffusion_lags(evidence=2)
    tie = DiffusionYield()
    tie.record([(11.0, False), (12.0, True)], best_before=10.0)  # neither improved
    assert not tie.diffusion_lags(evidence=1)
    ahead = DiffusionYield()
    ahead.record([(9.0, False), (8.0, True)], best_before=10.0)
    assert not ahead.diffusion_lags(evidence=1)


def plan_over(clusters: list[Cluster]) -> SeededPlan:
    plan = SeededPlan.__new__(SeededPlan)  # the rules alone, without a tune
    plan.run = SimpleNamespace(memory=None)
    plan.settings = TuneSettings(strategy="bcd")
    plan.clusters = clusters
    plan.misses, plan.yields, plan.task_best = {}, {}, {}
    return plan


def test_a_cluster_where_diffusion_earns_less_gets_one_probe_a_later_round() -> None:
    plan = plan_over([Cluster(0, "matmul", [0, 1, 2], 0), Cluster(1, "conv", [3, 4], 3)])
    assert plan.diffusion_quota(1, 16) == 4  # a quarter of the round
    plan.note_batch(1, [(5.0, False)] * 12 + [(6.0, True)] * 4)  # its first round: not counted
    assert plan.diffusion_quota(1, 16) == 4
    plan.note_batch(1, [(4.0, False)] * 12 + [(7.0, True)] * 4)  # the search improved, diffusion did not
    assert plan.diffusion_quota(2, 16) == 1  # the whole cluster's later rounds: a probe
    assert plan.diffusion_quota(2, 16, first=True) == 4  # a first round keeps its share
    assert plan.diffusion_quota(4, 16) == 4  # another cluster is not judged by this one
    plan.note_batch(2, [(9.0, False)] * 15 + [(9.0, True)])
    plan.note_batch(2, [(9.0, False)] * 15 + [(3.0, True)])  # the probe pays: the share returns
    assert plan.diffusion_quota(0, 16) == 4
    assert plan.diffusion_quota(1, 16) == 0  # task 1 missed twice itself: no more for it
