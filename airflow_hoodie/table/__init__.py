"""The Apache Hudi table format in pure Python: table versions 6 (Hudi 0.14/0.15), 8 and 9
(Hudi 1.x), read and written each in its own layout (timeline, log files, metadata table,
archived history), which one format object per table resolves.

Imports neither Spark nor Airflow, so Spark executors, the Airflow triggerer and the CLI
can all use it.
"""

from typing import Any

__all__ = ["read_table"]


def __getattr__(name: str) -> Any:
    # Lazy, so importing one format module (e.g. in a Spark executor) does not pull in the reader.
    if name == "read_table":
        from airflow_hoodie.table.read import read_table

        return read_table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
