"""The settings panel's representative rule, split ratio and prior source, and the cluster preview."""

from __future__ import annotations

from pathlib import Path

from conftest import open_and_wait

from bcd_core.clustering import heaviest
from bcd_core.session_view import SessionSnapshot


def test_the_representative_rule_reaches_the_settings_and_the_preview(qtbot, window, uneven_convnet: Path) -> None:
    panel = window.settings_panel
    assert panel.settings().representative_rule == "similar"

    def representatives(preview: SessionSnapshot) -> dict[str, int | None]:
        return {cluster.key: cluster.representative for cluster in preview.clusters}

    similar = representatives(open_and_wait(qtbot, window, uneven_convnet))
    panel.representative_rule.setCurrentText("heaviest")
    assert panel.settings().representative_rule == "heaviest"
    preview = open_and_wait(qtbot, window, uneven_convnet)
    chosen = representatives(preview)
    shared = [c for c in preview.clusters if len(c.members) > 1]
    assert shared, "the three convolutions share a cluster"
    for cluster in shared:
        work = [preview.tasks[i].flops * preview.tasks[i].weight for i in cluster.members]
        assert chosen[cluster.key] == cluster.members[heaviest(work)]
    assert chosen != similar, "on this model the two rules pick different representatives"

    panel.set_enabled_for_tuning(False)  # while tuning: fixed
    assert not panel.representative_rule.isEnabled()
    panel.set_enabled_for_tuning(True)
    assert panel.representative_rule.isEnabled()


def test_the_split_ratio_reaches_the_settings_and_the_preview(qtbot, window, uneven_convnet: Path) -> None:
    panel = window.settings_panel
    assert panel.settings().split_heavier_than == 0 and panel.split_heavier_than.text() == "off"
    whole = open_and_wait(qtbot, window, uneven_convnet)
    assert not any(c.key.startswith("heavy:") for c in whole.clusters)
    panel.split_heavier_than.setValue(1)  # any member with more work than its representative
    assert panel.settings().split_heavier_than == 1.0
    split = open_and_wait(qtbot, window, uneven_convnet)
    heavy = [c for c in split.clusters if c.key.startswith("heavy:")]
    assert heavy and all(len(c.members) == 1 for c in heavy)
    assert len(split.clusters) == len(whole.clusters) + len(heavy)
    panel.set_enabled_for_tuning(False)
    assert not panel.split_heavier_than.isEnabled()
    panel.set_enabled_for_tuning(True)


def test_the_prior_source_reaches_the_settings(qtbot, window) -> None:
    panel = window.settings_panel
    assert panel.settings().prior_source == "auto"  # the engine's default
    panel.prior_source.setCurrentText("representative")
    assert panel.settings().prior_source == "representative"
    panel.set_enabled_for_tuning(False)
    assert not panel.prior_source.isEnabled()
    panel.set_enabled_for_tuning(True)
    assert panel.prior_source.isEnabled()
