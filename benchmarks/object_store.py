"""Benchmark (not a test): what a table costs on S3, in requests by type and in time.

    .venv/bin/python benchmarks/object_store.py [--rows 10000] [--partitions 10,100] [--table-version 9]

On an object store the bill and the latency are counted in requests: LIST, GET, PUT, HEAD,
DELETE. This starts moto's S3 server on 127.0.0.1 with a counting HTTP proxy in front of it
(tests/s3/fault_proxy.py, no faults injected), writes a MERGE_ON_READ table of ``--rows`` rows
spread over each ``--partitions`` count, with the metadata table and without it, then counts
the requests of:

- one upsert of ``--rows`` rows (every record updated, in every partition);
- one compaction plan;
- one snapshot read.

The goal it checks: with the metadata table, the upsert's LIST requests do not grow with the
table's partitions (the file listing comes from the metadata table's ``files`` partition).
Writes ``benchmarks/out/object_store.json`` and a chart ``object_store.png`` (matplotlib).
Times are moto's on this machine (no network latency): compare the request counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import boto3  # noqa: E402
import pyarrow as pa  # noqa: E402

from airflow_hoodie.actions.compaction import schedule_compaction  # noqa: E402
from airflow_hoodie.actions.write import write_arrow  # noqa: E402
from airflow_hoodie.config import HoodieConfig  # noqa: E402
from airflow_hoodie.table.hoodie_table import HoodieTable  # noqa: E402
from airflow_hoodie.table.read import read_table  # noqa: E402
from tests.s3.fault_proxy import FaultProxy, request_type  # noqa: E402
from tests.s3.moto_server import moto_server  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "out"
TYPES = ("LIST", "GET", "PUT", "HEAD", "DELETE")


def counted(proxy: FaultProxy, fn: Callable[[], Any]) -> tuple[dict[str, int], float, Any]:
    start = len(proxy.requests)
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    c = Counter(request_type(m, p) for m, p in proxy.requests[start:])
    return {t: c.get(t, 0) for t in TYPES}, elapsed, result


def rows(n: int, partitions: int, ts: int, tag: str) -> pa.Table:
    ids = list(range(n))
    return pa.table({"id": [f"k{i:06d}" for i in ids], "p": [f"p{i % partitions:03d}" for i in ids],
                     "ts": pa.array([ts] * n, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def measure(endpoint: str, proxy: FaultProxy, partitions: int, n: int, mdt: bool, version: str) -> dict[str, Any]:
    bucket = f"bench-{partitions}-{'mdt' if mdt else 'nomdt'}-{int(time.time())}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    uri = f"s3://{bucket}/table"
    opts = {"endpoint_override": proxy.endpoint, "region": "us-east-1"}
    cfg = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
           "hoodie.write.table.version": version, "hoodie.table.name": "bench",
           "hoodie.metadata.enable": str(mdt).lower(), "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    write_arrow(uri, rows(n, partitions, 1, "a"), "bulk_insert", cfg, storage_options=opts)
    out: dict[str, Any] = {"partitions": partitions, "rows": n, "metadata_table": mdt}
    upsert, t, _ = counted(proxy, lambda: write_arrow(uri, rows(n, partitions, 2, "b"), "upsert", cfg,
                                                       storage_options=opts))
    out["upsert"] = {**upsert, "seconds": round(t, 2)}
    plan, t, res = counted(proxy, lambda: schedule_compaction(HoodieTable.load(uri, storage_options=opts),
                                                              HoodieConfig(cfg), force=True))
    out["compaction_plan"] = {**plan, "seconds": round(t, 2), "planned": res.instant is not None}
    read, t, table = counted(proxy, lambda: read_table(uri, storage_options=opts, metadata_enable=mdt))
    assert table.num_rows == n, table.num_rows
    out["snapshot_read"] = {**read, "seconds": round(t, 2)}
    return out


def chart(results: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        print("matplotlib is not installed: no chart")
        return False
    steps = ("upsert", "compaction_plan", "snapshot_read")
    fig, axes = plt.subplots(1, len(steps), figsize=(14, 4.5))
    for ax, step in zip(axes, steps):
        labels = [f"{r['partitions']}p {'MDT' if r['metadata_table'] else 'no MDT'}" for r in results]
        bottom = [0] * len(results)
        for t in TYPES:
            vals = [r[step][t] for r in results]
            ax.bar(labels, vals, bottom=bottom, label=t)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_title(step.replace("_", " "))
        ax.set_ylabel("requests")
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--partitions", default="10,100", help="comma-separated partition counts")
    ap.add_argument("--table-version", default="9")
    args = ap.parse_args()
    counts = [int(p) for p in args.partitions.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp, moto_server(Path(tmp)) as endpoint, FaultProxy(endpoint) as proxy:
        for partitions in counts:
            for mdt in (True, False):
                r = measure(endpoint, proxy, partitions, args.rows, mdt, args.table_version)
                results.append(r)
                print(json.dumps(r))
    OUT_DIR.mkdir(exist_ok=True)
    with open(OUT_DIR / "object_store.json", "w") as fh:
        json.dump({"rows": args.rows, "table_version": args.table_version, "results": results}, fh, indent=1)
    print("| partitions | metadata table | step | LIST | GET | PUT | HEAD | DELETE | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for step in ("upsert", "compaction_plan", "snapshot_read"):
            s = r[step]
            print(f"| {r['partitions']} | {'yes' if r['metadata_table'] else 'no'} | {step} | "
                  + " | ".join(str(s[t]) for t in TYPES) + f" | {s['seconds']} |")
    chart(results, OUT_DIR / "object_store.png")
    with_mdt = [r["upsert"]["LIST"] for r in results if r["metadata_table"]]
    print(f"upsert LIST requests with the metadata table, by partition count {counts}: {with_mdt}")


if __name__ == "__main__":
    main()
