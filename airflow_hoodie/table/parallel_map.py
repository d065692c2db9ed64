"""One bounded thread pool for work that waits on I/O or runs in GIL-free pyarrow kernels:
slice reads, storage round trips, and in-process plan operations all map a function over
items this way."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Iterable[T], max_workers: int, name: str) -> list[R]:
    """``fn`` of each item, at most ``max_workers`` at a time, results in item order.

    One item (or one worker) runs on the calling thread: a pool would only add a thread
    start. Every item runs even when one fails; the first failure in item order is raised
    once all have ended, so no call is left running behind the caller."""
    todo = list(items)
    workers = min(max_workers, len(todo))
    if workers <= 1:
        return [fn(x) for x in todo]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name) as pool:
        futures = [pool.submit(fn, x) for x in todo]
    return [f.result() for f in futures]
