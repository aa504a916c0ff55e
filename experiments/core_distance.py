"""Are onnxruntime's slow episodes the VM's two cores drifting apart on the host?

    .venv/bin/python experiments/core_distance.py MODEL.onnx MODULE.so [--seconds 240]

In short passes, in a fresh random order each, it times onnxruntime with the cores' threads
(as bcd does), onnxruntime on one thread, and the compiled module (MODULE.so, a compiled model
of MODEL); after each pass it times a cache line's round trip between CPU 0 and CPU 1 (two
pinned threads handing a flag back and forth, a small C helper built with the system's `cc`).
A guest cannot see where the host runs its virtual CPUs; the round trip can: tens of
nanoseconds when they share a core complex, hundreds when they do not or when one of them
waits for the host. It prints medians per 10 seconds and the correlation over all passes.
Run it on an idle machine; Linux only (CPU affinity), two CPUs or more.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bcd_core.export import library_runner, onnxruntime_runner
from bcd_core.model_import import load_onnx, random_inputs, static_inputs

ROUND_TRIP_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
static _Atomic int flag __attribute__((aligned(64)));
static int rounds_g;
static void pin(int cpu) {
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}
static void *answer(void *unused) {
  pin(1);
  for (int i = 0; i < rounds_g; i++) {
    while (atomic_load_explicit(&flag, memory_order_acquire) != 1) {}
    atomic_store_explicit(&flag, 0, memory_order_release);
  }
  return 0;
}
double round_trip_ns(int rounds) {
  pthread_t other; cpu_set_t before; struct timespec a, b;
  rounds_g = rounds; atomic_store(&flag, 0);
  sched_getaffinity(0, sizeof before, &before);
  pthread_create(&other, 0, answer, 0); pin(0);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < rounds; i++) {
    atomic_store_explicit(&flag, 1, memory_order_release);
    while (atomic_load_explicit(&flag, memory_order_acquire) != 0) {}
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  pthread_join(other, 0); sched_setaffinity(0, sizeof before, &before);
  return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds;
}
"""


def round_trip_timer() -> Callable[[], float]:
    """Nanoseconds for a cache line to go from CPU 0 to CPU 1 and back (mean of 100,000)."""
    folder = Path(tempfile.mkdtemp(prefix="bcd-core-distance-"))
    (folder / "round_trip.c").write_text(ROUND_TRIP_C)
    library = folder / "round_trip.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", library, folder / "round_trip.c"], check=True)
    helper = ctypes.CDLL(str(library))
    helper.round_trip_ns.restype = ctypes.c_double
    return lambda: helper.round_trip_ns(100_000)


def passes(runners: dict[str, tuple[Callable[[], object], int]], round_trip, seconds: float) -> list[dict]:
    """Each pass: every runner's mean ms over its calls, in a fresh order, then one round trip."""
    for run, _ in runners.values():
        for _ in range(5):
            run()
    rows, end = [], time.time() + seconds
    while time.time() < end:
        row = {"t": time.time()}
        for name in random.sample(list(runners), len(runners)):
            run, calls = runners[name]
            start = time.perf_counter()
            for _ in range(calls):
                run()
            row[name] = (time.perf_counter() - start) / calls * 1e3
        row["round trip ns"] = round_trip()
        rows.append(row)
    return rows


def print_summary(rows: list[dict]) -> None:
    names = [key for key in rows[0] if key != "t"]
    print("| seconds | " + " | ".join(names) + " |\n" + "|---" * (len(names) + 1) + "|")
    start = rows[0]["t"]
    buckets: dict[int, list[dict]] = {}
    for row in rows:
        buckets.setdefault(int((row["t"] - start) // 10) * 10, []).append(row)
    for second, group in buckets.items():
        cells = [f"{statistics.median(row[name] for row in group):.2f}" for name in names]
        print(f"| {second} | " + " | ".join(cells) + " |")
    trips = np.array([row["round trip ns"] for row in rows])
    for name in names[:-1]:
        correlation = np.corrcoef(np.array([row[name] for row in rows]), trips)[0, 1]
        print(f"{name}: correlation with the round trip over {len(rows)} passes {correlation:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("module", type=Path)
    parser.add_argument("--seconds", type=float, default=240)
    parser.add_argument("--json", type=Path, help="also write every pass here")
    args = parser.parse_args()
    model = load_onnx(args.model)
    inputs = random_inputs(static_inputs(model))
    runners = {  # bcd's own runners; about 70, 55 and 65 ms per pass on SqueezeNet
        "onnxruntime, bcd's threads ms": (onnxruntime_runner(model, inputs).run, 20),
        "onnxruntime, 1 thread ms": (onnxruntime_runner(model, inputs, threads=1).run, 8),
        "module ms": (library_runner(args.module, inputs).run, 6),
    }
    rows = passes(runners, round_trip_timer(), args.seconds)
    if args.json:
        args.json.write_text(json.dumps(rows))
    print_summary(rows)


if __name__ == "__main__":
    main()
