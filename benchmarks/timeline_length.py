"""Benchmark (not a test): what one small upsert costs as the active timeline grows.

    .venv/bin/python benchmarks/timeline_length.py [--commits 1,20,40,100] [--repeat 3]
        [--latency-ms 5] [--old-rev b2c4f0c^] [--new-rev b2c4f0c]

Every write checks that the files the timeline names as latest are still on storage, which
needs what every completed commit on the active timeline wrote. Tables whose archival runs
as a DAG task keep a hundred commits or more active, so this must not cost a round trip per
commit on an object store.

Builds one MERGE_ON_READ table (metadata table on, 4 partitions) by small upserts and keeps a
copy after each count of ``--commits``; then, for each count, times one more small upsert
(100 rows: half updates, half inserts) on a fresh copy of that table, in a fresh process (an
Airflow task starts cold), with the code of ``--old-rev`` (a ``git archive`` tree) and with the
working tree (or ``--new-rev``'s tree) alternately, ``--repeat`` times each:

- locally, counting the Storage calls the upsert makes;
- on moto's S3 server behind the counting proxy of tests/s3/fault_proxy.py, every request held
  ``--latency-ms`` first (a stand-in for S3's per-request latency), counting the requests.

The same process then makes a second upsert (``warm``): what a long-lived caller pays.
Reports medians of seconds and CPU seconds of the process, the calls of the first run, and
writes ``benchmarks/out/timeline_length.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIG = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
          "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
          "hoodie.table.name": "t", "hoodie.metadata.enable": "true", "hoodie.compact.inline": "false",
          "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
COUNTED = ("info", "list_dir", "read_bytes", "open_input", "open_output", "write_bytes", "create_if_absent",
           "delete", "delete_dir", "file_exists")


def batch(i: int) -> Any:
    """The i-th small batch: 50 keys of the previous batch updated, 50 new ones."""
    import numpy as np
    import pyarrow as pa

    ids = np.arange(i * 50, i * 50 + 100)
    return pa.table({"id": ids, "ts": np.full(100, i), "p": [f"p{x % 4}" for x in ids], "v": np.ones(100)})


# ------------------------------------------------------------------------ child process
def child(code: str, uri: str, n: int, endpoint: str | None) -> None:
    """One cold upsert and one warm upsert of ``code`` into ``uri``; prints a JSON line."""
    sys.path[0:0] = [code]
    import resource
    import threading

    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.table.storage import storage as st

    assert st.__file__.startswith(code), st.__file__
    counts: Counter[str] = Counter()
    guard = threading.Lock()
    for name in COUNTED:
        orig = getattr(st.Storage, name)

        def wrap(*a: Any, _o: Any = orig, _n: str = name, **k: Any) -> Any:
            with guard:
                counts[_n] += 1
            return _o(*a, **k)

        setattr(st.Storage, name, wrap)
    opts = {"endpoint_override": endpoint, "region": "us-east-1"} if endpoint else None
    out: dict[str, Any] = {}
    for run, i in (("cold", n + 1), ("warm", n + 2)):
        counts.clear()
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        write_arrow(uri, batch(i), "upsert", CONFIG, storage_options=opts)
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        out[run] = {"seconds": wall, "cpu_s": (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime),
                    "storage_calls": sum(counts.values()), "by_call": dict(counts)}
        print(json.dumps({"mark": run}), flush=True)
    print(json.dumps(out), flush=True)


# ----------------------------------------------------------------------- parent process
def build_tables(work: Path, commits: list[int]) -> dict[int, Path]:
    """A table after each count of commits (copies of one table as it grows)."""
    from airflow_hoodie.actions.write import write_arrow

    live = work / "live"
    out: dict[int, Path] = {}
    for i in range(1, max(commits) + 1):
        write_arrow(str(live), batch(i), "upsert", CONFIG)
        if i in commits:
            out[i] = work / f"after_{i}"
            shutil.copytree(live, out[i])
    return out


def run_child(code: Path, uri: str, n: int, endpoint: str | None, proxy: Any = None) -> dict[str, Any]:
    """Run :func:`child`; with a proxy, the S3 requests of the cold upsert are counted too."""
    from tests.s3.fault_proxy import request_type

    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(code), uri, str(n)]
    if endpoint:
        cmd.append(endpoint)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=str(code))
    start = len(proxy.requests) if proxy is not None else 0
    requests: dict[str, Counter[str]] = {}
    result: dict[str, Any] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        msg = json.loads(line)
        if "mark" in msg and proxy is not None:
            requests[msg["mark"]] = Counter(request_type(m, p) for m, p in proxy.requests[start:])
            start = len(proxy.requests)
        elif "cold" in msg:
            result = msg
    if proc.wait() != 0 or not result:
        raise RuntimeError(f"{cmd} failed ({proc.returncode})")
    for run, counted in requests.items():
        result[run]["s3_requests"] = sum(counted.values())
        result[run]["s3_by_type"] = dict(counted)
    return result


def upload(client: Any, bucket: str, table: Path) -> None:
    client.create_bucket(Bucket=bucket)
    for path in sorted(table.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=bucket, Key=f"t/{path.relative_to(table)}", Body=path.read_bytes())


def summarize(runs: list[dict[str, Any]], run: str) -> dict[str, Any]:
    first = runs[0][run]
    out = {"seconds_median": round(statistics.median(r[run]["seconds"] for r in runs), 4),
           "cpu_s_median": round(statistics.median(r[run]["cpu_s"] for r in runs), 4),
           "storage_calls": first["storage_calls"], "by_call": first["by_call"]}
    if "s3_requests" in first:
        out["s3_requests"] = first["s3_requests"]
        out["s3_by_type"] = first["s3_by_type"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", default="1,20,40,100")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency-ms", type=float, default=5.0)
    ap.add_argument("--old-rev", default="b2c4f0c^", help="the code before (a git revision)")
    ap.add_argument("--new-rev", default=None, help="the code after (a git revision; default the working tree)")
    ap.add_argument("--no-s3", action="store_true")
    args = ap.parse_args()
    commits = sorted(int(c) for c in args.commits.split(","))
    results: dict[str, Any] = {"commits": commits, "repeat": args.repeat, "latency_ms": args.latency_ms,
                               "old_rev": args.old_rev, "new_rev": args.new_rev or "working tree",
                               "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        old = work / "old"
        old.mkdir()
        subprocess.run(f"git -C {ROOT} archive {args.old_rev} | tar -x -C {old}", shell=True, check=True)
        codes = {"before": old, "after": ROOT}
        if args.new_rev:
            codes["after"] = work / "new"
            codes["after"].mkdir()
            subprocess.run(f"git -C {ROOT} archive {args.new_rev} | tar -x -C {codes['after']}", shell=True,
                           check=True)
        t0 = time.perf_counter()
        sys.path.insert(0, str(codes["after"]))  # the tables are built by the code after
        tables = build_tables(work, commits)
        results["build_s"] = round(time.perf_counter() - t0, 1)
        local: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for n in commits:
            for rep in range(args.repeat):
                for label in (("before", "after") if rep % 2 == 0 else ("after", "before")):
                    copy = work / f"run_{label}_{n}_{rep}"
                    shutil.copytree(tables[n], copy)
                    local.setdefault((label, n), []).append(run_child(codes[label], str(copy), n, None))
                    shutil.rmtree(copy)
            print(n, "local", {lb: summarize(local[(lb, n)], "cold")["seconds_median"] for lb in codes}, flush=True)
        results["local"] = {f"{lb}_{n}": {"cold": summarize(r, "cold"), "warm": summarize(r, "warm")}
                            for (lb, n), r in local.items()}
        if not args.no_s3:
            results["s3"] = s3_runs(work, tables, commits, codes, args)
    results["load_after"] = os.getloadavg()
    report(results, commits, not args.no_s3)


def s3_runs(work: Path, tables: dict[int, Path], commits: list[int], codes: dict[str, Path],
            args: argparse.Namespace) -> dict[str, Any]:
    import boto3

    from tests.s3.fault_proxy import FaultProxy
    from tests.s3.moto_server import moto_server

    latency = args.latency_ms / 1000

    class LatencyProxy(FaultProxy):
        """Every request waits ``latency`` before it is forwarded (in its own handler thread,
        so requests in flight together wait together, as on S3)."""

        def _match(self, method: str, path: str) -> Any:
            time.sleep(latency)
            return super()._match(method, path)

    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    with moto_server(work) as endpoint, LatencyProxy(endpoint) as proxy:
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        k = 0
        for n in commits:
            for rep in range(args.repeat):
                for label in (("before", "after") if rep % 2 == 0 else ("after", "before")):
                    k += 1
                    bucket = f"tl-{n}-{k}"
                    upload(client, bucket, tables[n])
                    runs.setdefault((label, n), []).append(
                        run_child(codes[label], f"s3://{bucket}/t", n, proxy.endpoint, proxy))
            print(n, "s3", {lb: summarize(runs[(lb, n)], "cold")["seconds_median"] for lb in codes}, flush=True)
    return {f"{lb}_{n}": {"cold": summarize(r, "cold"), "warm": summarize(r, "warm")} for (lb, n), r in runs.items()}


def report(results: dict[str, Any], commits: list[int], s3: bool) -> None:
    from benchmarks.report import write_report

    rows = []
    print("| where | commits before | before: s (CPU s) | after: s (CPU s) | calls before -> after | warm after |")
    print("|---|---|---|---|---|---|")
    for where in (["local", "s3"] if s3 else ["local"]):
        for n in commits:
            b, a = results[where][f"before_{n}"]["cold"], results[where][f"after_{n}"]["cold"]
            warm = results[where][f"after_{n}"]["warm"]
            calls = "s3_requests" if where == "s3" else "storage_calls"
            print(f"| {where} | {n} | {b['seconds_median']:.3f} ({b['cpu_s_median']:.2f}) | "
                  f"{a['seconds_median']:.3f} ({a['cpu_s_median']:.2f}) | {b[calls]} -> {a[calls]} | "
                  f"{warm['seconds_median']:.3f} s, {warm[calls]} |")
            label = f"{where}{' %gms' % results['latency_ms'] if where == 's3' else ''}, {n} commits"
            rows.append((f"upsert, {label} ({a[calls]} calls)", a["seconds_median"], b["seconds_median"],
                         f"{results['old_rev']} ({b[calls]} calls)"))
    print(write_report("timeline_length", results, rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else None)
    else:
        main()
