"""Schedule rules that TVM's pooling operators ask for and no TVM release registers.

A pooling block carries the annotation `schedule_rule = "meta_schedule.pool_max"` (or
`pool_avg`, ...). MetaSchedule's ApplyCustomRule looks up a function of that name for the
target's keys; when there is none it logs a C++ warning, removes the annotation and lets its
generic rules schedule the block. That fallback is right, but the warning came dozens of
times before every tune's progress bar. Each rule is registered here as that same fallback,
so design spaces (and the sketch keys clustering uses) stay what they were, without the noise.
"""

from __future__ import annotations

from typing import Any

import tvm_ffi

POOLING_RULES = ("pool_max", "pool_avg", "adaptive_pool_max", "adaptive_pool_avg")
TARGET_KEYS = ("cpu", "gpu", "cuda")


def _generic_rules(sch: Any, block: Any) -> list[Any]:
    """What ApplyCustomRule does for an unknown rule, without the warning."""
    sch.unannotate(block, "schedule_rule")
    return [sch]


def register_pooling_fallbacks() -> None:
    """Idempotent; a rule TVM (or anyone) registered itself is left alone."""
    for key in TARGET_KEYS:
        for rule in POOLING_RULES:
            name = f"s_tir.meta_schedule.{key}.meta_schedule.{rule}"
            if tvm_ffi.get_global_func(name, allow_missing=True) is None:
                tvm_ffi.register_global_func(name, _generic_rules)
