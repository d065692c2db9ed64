"""Progress lines a job prints while it runs: one short line per phase, with counts.

They go to stdout, which spark-submit relays into the Airflow task log, so a person
reading the log sees what the job is doing ("indexing 200 records against 3 files")
between Spark's own warnings.
"""

from __future__ import annotations

import time

PREFIX = "hoodie:"


def progress(message: str) -> None:
    print(f"{PREFIX} {message}", flush=True)


class Phase:
    """Times one phase: ``phase = Phase()`` at its start, ``phase.done("committed T")`` at its end."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def done(self, message: str) -> None:
        progress(f"{message} in {time.monotonic() - self.started:.1f} s")
