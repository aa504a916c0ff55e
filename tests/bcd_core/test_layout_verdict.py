"""Which layout the probes' figures choose: each layout other than the model's own must win by
the margin, Winograd over whichever of NCHW and blocked won."""

import time

import pytest
import tvm

from bcd_core.tuning.layout_verdict import WIN_MARGIN, ProbeFigures, chosen_layout, layout_verdict

FAST = 1 - 2 * WIN_MARGIN  # clearly past the margin
CLOSE = 1 - WIN_MARGIN / 2  # faster, but not by the margin


@pytest.mark.parametrize(
    "seconds, chosen",
    [
        ({"nchw": 1.0, "blocked": FAST}, "blocked"),
        ({"nchw": 1.0, "blocked": CLOSE}, "nchw"),
        ({"nchw": 1.0, "blocked": FAST, "winograd": FAST * FAST}, "winograd"),
        ({"nchw": 1.0, "blocked": FAST, "winograd": FAST * CLOSE}, "blocked"),
        ({"nchw": 1.0, "blocked": CLOSE, "winograd": FAST}, "winograd"),
        ({"nchw": 1.0, "blocked": 1.2, "winograd": CLOSE}, "nchw"),
        ({"nchw": 1.0, "blocked": 1.5, "winograd": FAST}, "winograd"),
    ],
)
def test_a_layout_is_chosen_only_when_it_wins_by_the_margin(seconds: dict, chosen: str) -> None:
    assert chosen_layout(seconds) == chosen


def test_a_probe_that_ended_early_loses_whatever_its_floor() -> None:
    """A cut probe counts at the floor it ended at, which is no timing of its model."""
    assert chosen_layout({"nchw": 0.5, "blocked": 1.0}, cut=["nchw"]) == "blocked"
    assert chosen_layout({"nchw": 1.0, "blocked": FAST, "winograd": 0.1}, cut=["winograd"]) == "blocked"
    assert chosen_layout({"nchw": 1.0, "blocked": 0.1, "winograd": FAST}, cut=["blocked"]) == "winograd"


@pytest.mark.parametrize(
    "seconds, ending",
    [
        ({"nchw": 1.0, "blocked": FAST, "winograd": FAST * CLOSE}, "blocked, since blocked with Winograd was faster"),
        ({"nchw": 1.0, "blocked": CLOSE}, "NCHW, since blocked was faster by less than 5%"),
        ({"nchw": 1.0, "blocked": 0.5}, "blocked, 2.00x as fast as the next"),
        ({"nchw": 1.0, "blocked": 1.5}, "none other 5% faster"),
    ],
)
def test_the_reason_never_calls_a_slower_choice_faster(seconds: dict, ending: str) -> None:
    """Where a faster layout fell short of its margin the reason says so, rather than calling the
    layout chosen some fraction under 1.00x "as fast as the next"."""
    target = tvm.target.Target({"kind": "llvm", "mcpu": "haswell"})
    choice = layout_verdict(target, ProbeFigures(seconds, trials=4, tasks=3, started=time.perf_counter()))
    assert ending in choice.reason and "as fast as the next" not in choice.reason.replace(ending, "")
