"""Executor that spreads plan operations over Spark tasks (one task per operation)."""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence, TypeVar

from airflow_hoodie.spark.worker_heap import freeze_worker_heap

T = TypeVar("T")
R = TypeVar("R")


class SparkExecutor:
    def __init__(self, spark, max_parallelism: int | None = None) -> None:
        self.spark = spark
        self.max_parallelism = max_parallelism

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        items = list(items)
        if not items:
            return []
        slices = len(items)
        if self.max_parallelism:
            slices = min(slices, self.max_parallelism)
        indexed = list(enumerate(items))
        rdd = self.spark.sparkContext.parallelize(indexed, slices)
        results = rdd.map(partial(_run_item, fn)).collect()
        results.sort(key=lambda pair: pair[0])
        return [r for _, r in results]


def _run_item(fn: Callable[[T], R], pair: tuple[int, T]) -> tuple[int, R]:  # executors
    freeze_worker_heap()
    return pair[0], fn(pair[1])
