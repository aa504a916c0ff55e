"""The layout the probes' timed models choose, and the sentence that tells the user why.

Each layout must earn its place: blocked is chosen over the model's own NCHW only when its
compiled model is WIN_MARGIN faster, and Winograd (blocked, with 3x3 convolutions by Winograd)
only when it is WIN_MARGIN faster than whichever of those two won. A probe that ended early
(probe_cutoff.py) counts at the floor it ended at, which loses by construction.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection
from dataclasses import dataclass, field

from tvm.target import Target

from bcd_core.layout import LayoutMode, layout_block
from bcd_core.records.measured import LayoutChoice

WIN_MARGIN = 0.05  # a blocked layout must make the compiled model this much faster to be chosen
# Each layout after the model's own, and the one it must beat.
CHALLENGES = ((LayoutMode.BLOCKED, LayoutMode.PLAIN), (LayoutMode.WINOGRAD, None))
WORDS = {LayoutMode.PLAIN: "in NCHW", LayoutMode.BLOCKED: "blocked", LayoutMode.WINOGRAD: "blocked with Winograd"}


@dataclass(frozen=True)
class ProbeFigures:
    """What the probes measured: each layout's seconds (the faster of its own timing and the
    one in turns, or the floor a cut probe ended at; None where a probe could not time its
    model), the cut probes' reasons, and how the models were timed."""

    seconds: dict[str, float | None]
    trials: int  # trials per task a probe gave
    tasks: int
    started: float  # time.perf_counter() when probing began
    cut: dict[str, str] = field(default_factory=dict)  # layout -> why its probe ended early
    in_turns: bool = False


def chosen_layout(seconds: dict[str, float], cut: Collection[str] = ()) -> str:
    """The model's own layout unless another wins its challenge by WIN_MARGIN. A layout whose
    probe ended early (`cut`) loses every challenge, whatever its floor."""
    seconds = {layout: math.inf if layout in cut else s for layout, s in seconds.items()}
    chosen = LayoutMode.PLAIN
    for layout, against in CHALLENGES:
        rival = seconds.get(against or chosen)
        if layout in seconds and rival is not None and seconds[layout] < rival * (1 - WIN_MARGIN):
            chosen = layout
    return chosen


def layout_verdict(target: Target, figures: ProbeFigures) -> LayoutChoice:
    """The choice, its reason and figures; the model's own layout where a probe could not time
    every task."""
    probe_s = time.perf_counter() - figures.started
    if any(seconds is None for seconds in figures.seconds.values()):
        reason = "measured: a probe could not time every task, so the model's own"
        return LayoutChoice(LayoutMode.PLAIN, reason, probe_tasks=figures.tasks, probe_s=probe_s)
    seconds = {layout: s for layout, s in figures.seconds.items() if s is not None}
    layout = chosen_layout(seconds, figures.cut)
    return LayoutChoice(
        layout,
        _reason(seconds, layout, figures),
        layout_block(target, layout),
        seconds.get(LayoutMode.PLAIN),
        seconds.get(LayoutMode.BLOCKED),
        figures.tasks,
        figures.trials,
        probe_s,
        seconds.get(LayoutMode.WINOGRAD),
    )


def _reason(seconds: dict[str, float], layout: str, figures: ProbeFigures) -> str:
    how = "timed alone and in turns, the faster of each," if figures.in_turns else "timed"
    timed = [f"{seconds[each] * 1e3:.3g} ms {WORDS[each]}" for each in seconds if each not in figures.cut]
    text = f"measured: a round of up to {figures.trials} trials a task, the compiled models {how} ran " + (
        ", ".join(timed)
    )
    for each, why in figures.cut.items():
        text += f"; the {WORDS[each].removeprefix('in ')} probe ended early, {why}"
    others = {each: s for each, s in seconds.items() if each not in (layout, *figures.cut)}
    chosen = WORDS[layout].removeprefix("in ")
    if others and min(others.values()) < seconds[layout]:  # a faster layout short of its margin
        faster = WORDS[min(others, key=others.__getitem__)]
        return f"{text}: {chosen}, since {faster} was faster by less than {WIN_MARGIN:.0%}"
    if layout == LayoutMode.PLAIN or not others:
        return f"{text}: none other {WIN_MARGIN:.0%} faster"
    return f"{text}: {chosen}, {min(others.values()) / seconds[layout]:.2f}x as fast as the next"
