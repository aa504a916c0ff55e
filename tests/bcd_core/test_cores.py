"""TVM's runtime runs kernels on the cores bcd tunes for (bcd_core/cores.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bcd_core.cores import host_core_count, kernel_threads

THREADS_OF_A_FRESH_PROCESS = """
import os
import bcd_core
import tvm
from bcd_core.tuning.settings import TuneSettings
print(tvm.get_global_func("runtime.NumThreads")(), os.environ.get("TVM_NUM_THREADS"), TuneSettings().kernel_threads)
"""


def fresh_process_threads(**environment: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")}
    output = subprocess.run(
        [sys.executable, "-c", THREADS_OF_A_FRESH_PROCESS],
        env=env | environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return output.stdout.split()


def test_kernels_run_on_every_core_the_process_may_use() -> None:
    """Left alone, TVM takes half the logical CPUs on x86: one core of a 2-vCPU VM."""
    cores = str(host_core_count())
    assert fresh_process_threads() == [cores, cores, cores]


@pytest.mark.parametrize("variable", ["TVM_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_thread_count_the_user_chose_is_kept(variable: str) -> None:
    threads, recorded_variable, recorded = fresh_process_threads(**{variable: "1"})
    assert (threads, recorded) == ("1", "1")
    assert recorded_variable == ("1" if variable == "TVM_NUM_THREADS" else "None")


def test_this_process_records_what_tvm_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    assert kernel_threads() == 3
    monkeypatch.setenv("TVM_NUM_THREADS", "many")  # TVM's atoi reads 0, and runs on one thread
    assert kernel_threads() == 1
