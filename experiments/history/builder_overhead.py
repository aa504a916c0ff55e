"""Wall time of building one tiny candidate, four rounds in a row, with MetaSchedule's
LocalBuilder (a fresh worker pool per round) and with bcd's PooledBuilder (workers kept).

    python experiments/history/builder_overhead.py
"""

from __future__ import annotations

import time

import tvm
from tvm import te
from tvm.s_tir import meta_schedule as ms

from bcd_core.target import host_core_count, host_target
from bcd_core.tuning.builder import PooledBuilder, build_candidate


def main() -> None:
    a = te.placeholder((64,), name="a")
    b = te.compute((64,), lambda i: a[i] + 1.0, name="b")
    inputs = [ms.builder.BuilderInput(tvm.IRModule({"main": te.create_prim_func([a, b])}), host_target())]
    workers = host_core_count()
    builders = {
        "LocalBuilder": ms.builder.LocalBuilder(max_workers=workers, timeout_sec=10, f_build=build_candidate),
        "PooledBuilder": PooledBuilder(max_workers=workers, timeout_sec=10.0),
    }
    for name, builder in builders.items():
        times = []
        for _ in range(4):
            start = time.perf_counter()
            result = builder.build(inputs)[0]
            times.append(time.perf_counter() - start)
            assert result.error_msg is None, result.error_msg
        print(f"{name:14s} " + "  ".join(f"{t:.3f} s" for t in times))
    builders["PooledBuilder"].close()


if __name__ == "__main__":
    main()
