"""Benchmark (not a test): the storage calls of one health computation (issue 40).

    .venv/bin/python benchmarks/health_calls.py [--partitions 100,1000] [--commits 3]

For each partition count, writes a COPY_ON_WRITE table with one file group per partition
(its metadata table's ``files`` partition kept, the default) and ``--commits`` more upserts
touching 10 partitions each, then counts every storage call (list, read, stat, open) that
``table_health`` makes through the metadata table and, for contrast, with the metadata
table dropped (storage listing). The API page and the maintenance-due trigger run this once
per poll, so it must not grow with the partitions. Writes benchmarks/out/health_calls.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa  # noqa: E402

from benchmarks.listing import STORAGE_METHODS  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def count_calls(fn: Any) -> tuple[Any, Counter[str]]:
    """Run ``fn`` with every Storage method of STORAGE_METHODS counted."""
    from airflow_hoodie.table.storage.storage import Storage

    calls: Counter[str] = Counter()
    originals = {m: getattr(Storage, m) for m in STORAGE_METHODS}

    def wrap(name: str, method: Any) -> Any:
        def counted(self: Any, *a: Any, **k: Any) -> Any:
            calls[name] += 1
            return method(self, *a, **k)
        return counted

    for name, method in originals.items():
        setattr(Storage, name, wrap(name, method))
    try:
        return fn(), calls
    finally:
        for name, method in originals.items():
            setattr(Storage, name, method)


def build(base: str, partitions: int, commits: int) -> None:
    from airflow_hoodie.actions.write import write_arrow

    cfg = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p"}
    write_arrow(base, pa.table({"id": list(range(partitions)), "ts": [1] * partitions,
                                "p": [f"p{i:04d}" for i in range(partitions)]}), "insert", cfg, table_name="health")
    for c in range(commits):
        ids = list(range(c, partitions, max(1, partitions // 10)))
        write_arrow(base, pa.table({"id": ids, "ts": [c + 2] * len(ids), "p": [f"p{i:04d}" for i in ids]}),
                    "upsert", cfg)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="100,1000")
    ap.add_argument("--commits", type=int, default=3)
    args = ap.parse_args()
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.health.table_health import table_health

    results: dict[str, Any] = {}
    tmp = tempfile.mkdtemp(prefix="health-calls-")
    try:
        for n in (int(p) for p in args.partitions.split(",")):
            base = os.path.join(tmp, f"t{n}")
            build(base, n, args.commits)
            health, calls = count_calls(lambda: table_health(base))
            assert health["file_groups"] == n and health["partitions"]["count"] == n
            plain = os.path.join(tmp, f"plain{n}")
            shutil.copytree(base, plain)
            write_arrow(plain, pa.table({"id": [0], "ts": [99], "p": ["p0000"]}), "upsert",
                        {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
                         "hoodie.datasource.write.partitionpath.field": "p", "hoodie.metadata.enable": "false"})
            _, plain_calls = count_calls(lambda: table_health(plain))
            results[str(n)] = {"metadata_table": {"total": sum(calls.values()), **calls},
                               "storage_listing": {"total": sum(plain_calls.values()), **plain_calls}}
            print(f"{n} partitions: {sum(calls.values())} storage calls through the metadata table "
                  f"({dict(calls)}); {sum(plain_calls.values())} listing storage ({dict(plain_calls)})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "health_calls.json"), "w") as f:
        json.dump({"commits": args.commits, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
