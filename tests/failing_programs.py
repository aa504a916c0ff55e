"""Diffused programs that fail wherever they land, for tests of what a tuner does after a
failure: each gets a wrong argument shape, so it builds and then fails to run (in real tunes,
builds that outlast the builder's timeout)."""

from __future__ import annotations

from typing import Any

from tvm.s_tir import meta_schedule as ms

from bcd_core.diffusion import DiffusedProgram


def failing_candidate(program: DiffusedProgram) -> ms.MeasureCandidate:
    args = ms.arg_info.ArgInfo.from_entry_func(program.schedule.mod, remove_preproc=True)
    return ms.MeasureCandidate(program.schedule, [ms.arg_info.TensorInfo("float32", [1]), *args[1:]])


def make_every_diffused_program_fail(monkeypatch: Any) -> None:
    monkeypatch.setattr(DiffusedProgram, "candidate", failing_candidate)
