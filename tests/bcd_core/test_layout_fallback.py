"""The search for the convolutions that must stay NCHW, on a stand-in conversion: it fails
while any culprit is blocked (not in `plain`)."""

import gc
import os

import pytest

from bcd_core.layout_fallback import convert_keeping_plain_where_needed


class StandInConversion:
    def __init__(self, culprits: set[int], hopeless: bool = False) -> None:
        self.culprits, self.hopeless, self.calls = culprits, hopeless, 0

    def __call__(self, plain: list[int]) -> str:
        self.calls += 1
        if self.hopeless or not self.culprits <= set(plain):
            raise ValueError("a blocked tensor reaches an operator TVM cannot convert")
        return f"converted with {sorted(plain)} plain"


@pytest.mark.parametrize("culprits", [set(), {0}, {7}, {63}, {5, 6}, {2, 30, 41}])
def test_exactly_the_culprits_stay_plain_in_a_few_conversions_each(culprits: set[int]) -> None:
    convolutions = list(range(64))
    convert = StandInConversion(culprits)
    converted, plain = convert_keeping_plain_where_needed(convolutions, convert)
    assert sorted(plain) == sorted(culprits) and converted == f"converted with {sorted(culprits)} plain"
    assert convert.calls <= 2 + len(culprits) * 8  # log2(64) + 2 a culprit, not 64


def test_a_model_that_does_not_convert_even_all_nchw_raises_the_first_error() -> None:
    with pytest.raises(ValueError, match="cannot convert"):
        convert_keeping_plain_where_needed(list(range(8)), StandInConversion(set(), hopeless=True))


def test_the_same_conversion_again_keeps_the_same_convolutions_plain_at_once() -> None:
    key = ("a model's hash", "a target")
    first = StandInConversion({3, 9})
    _, plain = convert_keeping_plain_where_needed(list(range(16)), first, key)
    again = StandInConversion({3, 9})
    converted, plain_again = convert_keeping_plain_where_needed(list(range(16)), again, key)
    assert plain_again == plain == [3, 9] and again.calls == 1 and first.calls > 1
    assert converted == "converted with [3, 9] plain"


class HalfBuilt:
    """Like TVM's half-built BlockBuilder: held in a reference cycle by the failed call's frame,
    it warns on file descriptor 2 (as C++ does) when the garbage collector destroys it."""

    def __init__(self) -> None:
        self.itself = self

    def __del__(self) -> None:
        os.write(2, b"BlockBuilder destroyed with remaining blocks!\n")


class LeavingHalfBuilt(StandInConversion):
    succeeded = 0

    def __call__(self, plain: list[int]) -> str:
        os.write(2, b"said while converting\n")
        try:
            converted = super().__call__(plain)
            self.succeeded += 1
            return converted
        except ValueError:
            half_built = HalfBuilt()  # noqa: F841 - the failed call's frame holds it, as TVM's do
            raise


def test_the_failed_conversions_the_search_expects_leave_no_warnings_behind(capfd: pytest.CaptureFixture[str]) -> None:
    """What TVM says while freeing a refused conversion is not the user's business; what a
    conversion that works says still reaches stderr."""
    convert = LeavingHalfBuilt({3})
    _, plain = convert_keeping_plain_where_needed(list(range(8)), convert)
    gc.collect()
    err = capfd.readouterr().err
    assert plain == [3] and convert.calls > convert.succeeded > 0
    assert "BlockBuilder" not in err and err.count("said while converting") == convert.succeeded
