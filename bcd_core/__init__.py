"""bcd engine: ONNX import, tasks and clustering, tuning strategies, SQLite records, export.

Headless by design: nothing in this package may import Qt.
"""

__version__ = "0.2.0"
