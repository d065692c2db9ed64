"""Benchmark runner (not a test): issue 41's performance table, before and after, in one sitting.

    .venv/bin/python benchmarks/sitting.py --before REV [--only NAME ...] [--skip NAME ...]

Checks out ``REV`` into a scratch worktree and gives it this checkout's ``benchmarks/``, so both
sides are measured by the same code; then runs each benchmark below on the old package and on
this one, back to back (before, after, next benchmark), with nothing else meant to run on the
machine. Each run's JSON is copied to ``out/sitting/<name>_{before,after}.json`` and every
comparison row of both (``table`` in the JSON: work, ours, peer, ratio) is printed as one
markdown table with the command that made it, ready for a closing note.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTHON = sys.executable

#: (name, arguments after the script, the JSON it writes under out/); a name ending in
#: ``:after`` runs on this checkout only (a benchmark of something the old one lacks)
RUNS: list[tuple[str, list[str], str]] = [
    ("upsert_driver", ["upsert.py", "--codec", "snappy", "--repeat", "3"], "upsert.json"),
    ("upsert_large_dataframe", ["upsert.py", "--rows", "2000000", "--batch", "1000000", "--codec", "snappy",
                                "--repeat", "3", "--path", "dataframe", "--in-process"],
     "upsert_1000000_into_2000000_dataframe_path.json"),
    ("format_floor:after", ["format_floor.py"], "format_floor.json"),
    ("bulk_insert", ["bulk_insert.py", "--rows", "1000000", "--repeat", "5", "--codec", "snappy"], "bulk_insert.json"),
    ("compaction", ["services.py", "--rows", "400000", "--repeat", "5"], "services.json"),
    ("read", ["read.py", "--repeat", "5"], "read.json"),
    # 8 MB file groups: with Hudi's 120 MB a 2M-row batch's new group legitimately holds ~2M rows
    ("scaling_rss", ["scaling.py", "--rss-batches", "200000", "2000000", "--file-group-mb", "8",
                     "--split-size", "150000"], "scaling_rss_8mb.json"),
    ("crossover:after", ["crossover.py", "--batches", "300000", "1000000", "2000000", "4000000", "--repeat", "1"],
     "crossover.json"),
    ("scaling_rss_5m:after", ["scaling.py", "--rss-batches", "200000", "2000000", "5000000", "--file-group-mb", "8",
                              "--split-size", "150000"], "scaling_rss_8mb.json"),
]


def _checkout(rev: str, path: str) -> None:
    """``rev`` at ``path`` with this checkout's benchmarks (their out/ left behind)."""
    if os.path.exists(path):
        subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", path], check=False)
        shutil.rmtree(path, ignore_errors=True)
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", path, rev], check=True)
    shutil.rmtree(os.path.join(path, "benchmarks"))
    shutil.copytree(HERE, os.path.join(path, "benchmarks"), ignore=shutil.ignore_patterns("out", "__pycache__"))


def _run(checkout: str, name: str, args: list[str], out_json: str, side: str) -> dict | None:
    log = os.path.join(HERE, "out", "sitting", f"{name}_{side}.log")
    env = {**os.environ, "PYTHONPATH": checkout, "PYSPARK_PYTHON": PYTHON}
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.run([PYTHON, os.path.join(checkout, "benchmarks", args[0]), *args[1:]], cwd=checkout,
                              env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    src = os.path.join(checkout, "benchmarks", "out", out_json)
    print(f"{name} {side}: exit {proc.returncode} in {time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f}",
          flush=True)
    if proc.returncode or not os.path.exists(src):
        return None
    shutil.copy(src, os.path.join(HERE, "out", "sitting", f"{name}_{side}.json"))
    with open(src) as fh:
        return json.load(fh)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="the revision measured as 'before'")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--skip", nargs="*", default=[])
    ap.add_argument("--scratch", default="/tmp/hoodie-sitting-before")
    args = ap.parse_args()
    os.makedirs(os.path.join(HERE, "out", "sitting"), exist_ok=True)
    _checkout(args.before, args.scratch)
    lines = ["| work | command | before: ours / peer (ratio) | after: ours / peer (ratio) | peer |",
             "|---|---|---|---|---|"]
    for name, run_args, out_json in RUNS:
        if (args.only and name not in args.only) or name in args.skip:
            continue
        sides = (("after", REPO),) if name.endswith(":after") else (("before", args.scratch), ("after", REPO))
        name = name.removesuffix(":after")
        results = {"before": None, **{side: _run(co, name, run_args, out_json, side) for side, co in sides}}
        command = "benchmarks/" + " ".join(run_args)
        after_rows = {(r["work"], r["peer"]): r for r in (results["after"] or {}).get("table", [])}
        before_rows = {(r["work"], r["peer"]): r for r in (results["before"] or {}).get("table", [])}
        for key in list(dict.fromkeys([*before_rows, *after_rows])):
            cells = []
            for rows in (before_rows, after_rows):
                r = rows.get(key)
                cells.append(f"{r['ours_s']} / {r['peer_s']} ({r['ratio']}x)" if r else "n/a")
            lines.append(f"| {key[0]} | `{command}` | {cells[0]} | {cells[1]} | {key[1]} |")
        print("\n".join(lines), flush=True)
    with open(os.path.join(HERE, "out", "sitting", "table.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
