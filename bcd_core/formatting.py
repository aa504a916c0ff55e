"""How durations, latencies, FLOP counts and counted things read, the same in the CLI, GUI
and reports."""

from __future__ import annotations


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def format_latency(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def latency_unit(seconds: float | None) -> tuple[str, float]:
    """The unit a plot of latencies up to `seconds` reads best in, and its scale from seconds:
    an MLP's 75 µs would sit flat on zero on a millisecond axis."""
    if seconds is not None and 0 < seconds < 1e-3:
        return "µs", 1e6
    return "ms", 1e3


def format_ms(seconds: float | None, digits: int = 3, missing: str = "n/a") -> str:
    """A latency as a bare number of milliseconds, for tables whose column names the unit."""
    return missing if seconds is None else f"{seconds * 1e3:.{digits}f}"


def format_flops(flops: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if flops >= scale:
            return f"{flops / scale:.2f}{unit}"
    return f"{flops:.0f}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 task`, `2 tasks`."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
