"""Where plan operations run: in-process for unit tests, on Spark inside jobs.

Actions hand an executor a picklable function and a list of plain-data operations; the
driver keeps the timeline. Keeping the interface this small lets every action be tested
without a SparkSession and run distributed without change.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Apply ``fn`` to every item, possibly in parallel; results in item order."""
        ...


class LocalExecutor:
    """Runs operations one after another in this process."""

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(item) for item in items]
