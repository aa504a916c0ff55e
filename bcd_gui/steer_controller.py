"""Steering a tune through the engine's control API: a running tune's requests apply at its next
round; requests made before Tune wait in the window's pending control and apply when it starts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.tuning.channel import RemoteControl
from bcd_core.tuning.control import TuningControl
from bcd_gui.dialogs import ask_budget, ask_cluster
from bcd_gui.host import Controller

log = logging.getLogger("bcd.gui")


class SteerController(Controller):
    """Turns the user's choices on the tree's selection into requests to the running tune's
    control, or before Tune to the control the next tune will start with."""

    def _steer(self, describe: str, request: Callable[[TuningControl | RemoteControl], Any]) -> None:
        win = self.win
        if win.snapshot is None:
            win.report_error(BcdError("open a model first: steering acts on its tasks and clusters"), describe)
            return
        control = win.worker.control if win.worker is not None else win.pending_control
        try:
            request(control)
        except BcdError as err:  # the store is locked or gone: nothing was sent
            win.report_error(err, describe)
            return
        if win.worker is None:
            win.refresh_preview()  # the model not tuned yet shows what the requests will do
        win.show_pending()
        when = "at the next round" if win.worker is not None else "when tuning starts"
        win.status_text.setText(f"{describe}: applies {when}")
        log.info("requested: %s (applies %s)", describe, when)

    def request_priority(self, order: list[str]) -> None:
        self._steer("reorder clusters", lambda control: control.set_cluster_priority(order))

    def request_move(self, task_index: int, cluster_key: str | None) -> None:
        self._steer("move a task", lambda control: control.move_task(task_index, cluster_key))

    def move_selected_cluster(self, offset: int) -> None:
        """Move the selected cluster `offset` places in the tuning order (clamped to the ends)."""
        key = self.win.selected_cluster()
        snapshot = self.win.snapshot
        if key is None or snapshot is None:
            return
        keys = [c.key for c in snapshot.clusters]
        position = keys.index(key)
        target = max(0, min(len(keys) - 1, position + offset))
        if target != position:
            keys.insert(target, keys.pop(position))
            self.request_priority(keys)

    def choose_budget(self) -> None:
        win = self.win
        if win.snapshot is None:
            return
        tasks, cluster = win.selected_tasks(), win.selected_cluster()
        cap = win.snapshot.task(tasks[0]).cap if tasks else None
        current = cap if cap is not None else win.settings_panel.trials_per_task.value()
        what = f"{len(tasks)} task(s)" if tasks else f"every task of cluster {cluster}"
        trials = ask_budget(self.window_widget, what, current)
        if trials is not None:
            self.set_budget(trials)

    def set_budget(self, trials: int) -> None:
        """Cap the selected tasks at `trials`, or, with no task selected, the selected cluster's."""
        tasks, cluster = self.win.selected_tasks(), self.win.selected_cluster()
        if tasks:
            for index in tasks:
                self._steer(
                    "change a task's budget",
                    lambda control, i=index: control.set_task_budget(i, trials),
                )
        elif cluster:
            self._steer(
                "change a cluster's budget",
                lambda control: control.set_cluster_budget(cluster, trials),
            )

    def skip_selected(self) -> None:
        for index in self.win.selected_tasks():
            self._steer("skip a task", lambda control, i=index: control.skip_task(i))

    def unskip_selected(self) -> None:
        for index in self.win.selected_tasks():
            self._steer("un-skip a task", lambda control, i=index: control.unskip_task(i))

    def choose_move_target(self) -> None:
        win = self.win
        if win.snapshot is None or not win.selected_tasks():
            return
        labels = [win.tree_model.cluster_title(c.key, row) for row, c in enumerate(win.snapshot.clusters)]
        choice = ask_cluster(self.window_widget, labels)
        if choice is not None:
            self.move_selected_task(win.snapshot.clusters[labels.index(choice)].key)

    def move_selected_task(self, cluster_key: str | None) -> None:
        for index in self.win.selected_tasks():
            self.request_move(index, cluster_key)

    def make_selected_representative(self) -> None:
        tasks = self.win.selected_tasks()
        if tasks and self.win.snapshot is not None:
            task = self.win.snapshot.task(tasks[0])
            self._steer(
                "choose a representative",
                lambda control: control.set_representative(task.cluster_key, task.index),
            )
