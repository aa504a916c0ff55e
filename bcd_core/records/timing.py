"""How a session's candidates were timed, and whose records compare with them.

On CPUs a tune may time candidates with their weights flushed from the caches
(`--cpu-cache flushed`, TuneSettings.cpu_cache, tuning/cache_flush.py) or warm, as stock
MetaSchedule does and as sessions stored before the option did; warm reads faster (MobileNetV2's
best programs: 8.9 ms summed warm, 11.2 ms flushed). Records of a session timed one way never rank
against records timed the other way: not in a search's seeds, not in diffusion, not in export's
choice of each task's best program, not in the tuning memory.
"""

from __future__ import annotations

import json
from typing import Any

from bcd_core.target import is_gpu, target_of_key

WARM = "warm"
FLUSHED = "flushed"


def timing_for(cpu_cache: str, target_key: str) -> str:
    """GPU candidates are never flushed, whatever the setting says."""
    target = target_of_key(target_key)
    return WARM if target is not None and is_gpu(target) else cpu_cache


def session_timing(session: dict[str, Any]) -> str:
    """Sessions stored before the option timed warm."""
    stored = json.loads(session["settings"] or "{}").get("cpu_cache", WARM)
    return timing_for(stored, session["target_key"])
