"""A plain-Python model of what a Hudi table must hold after a sequence of writes."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa


class TableModel:
    """Rows by (partition, key) for non-global semantics, by key for global ones."""

    def __init__(self, partitioned: bool, global_index: bool = False) -> None:
        self.partitioned = partitioned
        self.global_index = global_index
        self.rows: dict[Any, dict] = {}

    def _k(self, r: dict) -> Any:
        return r["id"] if (self.global_index or not self.partitioned) else (r["p"], r["id"])

    @staticmethod
    def dedupe(batch: list[dict], by_partition: bool) -> list[dict]:
        best: dict[Any, dict] = {}
        for r in batch:
            k = (r["p"], r["id"]) if by_partition else r["id"]
            if k not in best or r["ts"] >= best[k]["ts"]:
                best[k] = r
        return list(best.values())

    def apply(self, op: str, batch: list[dict]) -> None:
        if op in ("upsert", "delete"):
            batch = self.dedupe(batch, self.partitioned and not self.global_index)
        if op == "upsert":
            for r in batch:
                if self.global_index:
                    self.rows.pop(r["id"], None)
                self.rows[self._k(r)] = r
        elif op == "delete":
            for r in batch:
                self.rows.pop(self._k(r), None)
        elif op in ("insert", "bulk_insert"):
            for r in batch:
                self.rows[self._k(r)] = r
        elif op == "insert_overwrite":
            parts = {r["p"] for r in batch}
            self.rows = {k: v for k, v in self.rows.items() if v["p"] not in parts}
            for r in batch:
                self.rows[self._k(r)] = r
        elif op == "insert_overwrite_table":
            self.rows = {self._k(r): r for r in batch}

    def expected(self) -> list[tuple]:
        return sorted((r["id"], r["p"], r["ts"], r["v"]) for r in self.rows.values())


def actual(table: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["p"], r["ts"], r["v"]) for r in table.select(["id", "p", "ts", "v"]).to_pylist())


def random_batch(rng: random.Random, key_space: int, n: int, ts: int, partitions: list[str],
                 sticky: dict[int, str] | None = None) -> list[dict]:
    """Rows with keys from ``key_space``; ``sticky`` keeps a key in one partition (non-global tests)."""
    out = []
    for _ in range(n):
        k = rng.randrange(key_space)
        p = sticky.setdefault(k, rng.choice(partitions)) if sticky is not None else rng.choice(partitions)
        out.append({"id": k, "ts": ts + rng.randrange(3), "p": p, "v": f"v{k}_{ts}_{rng.randrange(1000)}"})
    return out


def to_arrow(batch: list[dict]) -> pa.Table:
    return pa.table({
        "id": pa.array([r["id"] for r in batch], pa.int64()),
        "ts": pa.array([r["ts"] for r in batch], pa.int64()),
        "p": pa.array([r["p"] for r in batch], pa.string()),
        "v": pa.array([r["v"] for r in batch], pa.string()),
    })
