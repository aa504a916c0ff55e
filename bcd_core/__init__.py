"""bcd engine: ONNX import, tasks and clustering, tuning strategies, SQLite records, export.

Headless by design: nothing in this package may import Qt.
"""

from bcd_core.cores import use_every_core_for_kernels

__version__ = "0.2.0"

# Before any kernel runs: TVM's default on x86 is half the logical CPUs (bcd_core/cores.py).
use_every_core_for_kernels()
