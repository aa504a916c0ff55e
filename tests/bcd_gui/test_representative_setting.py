"""The settings panel's representative rule, and the cluster preview it gives."""

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
