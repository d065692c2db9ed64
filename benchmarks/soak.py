"""Soak (not a test): the loop of tests/soak/test_soak.py for as long as a person wants.

    .venv/bin/python benchmarks/soak.py --minutes 60 [--versions 6,9] [--table-type MERGE_ON_READ]
                                        [--new-keys 10] [--updated-keys 10] [--seed 0] [--no-hudi-rs]

A table per version, with Hudi's default clean, compaction and archival settings, goes
through rounds of upsert, upsert, clean, compaction and archival; after every step our reader
through the metadata table, our reader listing storage and hudi-rs must return the model's
rows and the metadata table must list what storage holds (tests/soak/service_loop.py, the one
home of the loop). The time is split evenly between the versions, run one after the other.
The first disagreement stops that version's run and is reported with its step.

Writes ``benchmarks/out/soak_<minutes>min.json``: per version the rounds, keys, how often each
service did work, the seconds spent in each step and in the checks, and the failure if any.
Exits non-zero when any reader disagreed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import OUT_DIR  # noqa: E402
from tests.soak.service_loop import SOAK_ROUND, ReadersDisagree, ServiceLoop  # noqa: E402


def run_version(work: str, version: int, table_type: str, seconds: float, args: argparse.Namespace) -> dict[str, Any]:
    """Rounds on a fresh table of ``version`` until ``seconds`` passed or a reader disagreed."""
    loop = ServiceLoop(os.path.join(work, f"v{version}_{table_type.lower()}"), version, table_type, seed=args.seed,
                       new_keys=args.new_keys, updated_keys=args.updated_keys, hudi_rs=not args.no_hudi_rs)
    started = time.monotonic()
    failure = None
    try:
        while time.monotonic() - started < seconds:
            loop.run_round(SOAK_ROUND)
            if loop.round % 10 == 0:
                print(f"v{version}: round {loop.round}, {len(loop.model)} keys, "
                      f"{time.monotonic() - started:.0f} s", flush=True)
    except ReadersDisagree as exc:
        failure = {"round": loop.round, "error": str(exc)[:2000], "table": loop.base}
        print(f"v{version}: FAILED in round {loop.round}: {str(exc)[:500]}", flush=True)
    return {**loop.summary(), "seconds": round(time.monotonic() - started, 1), "failure": failure}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, required=True, help="total duration, split between the versions")
    parser.add_argument("--versions", default="6,9")
    parser.add_argument("--table-type", default="MERGE_ON_READ", choices=["MERGE_ON_READ", "COPY_ON_WRITE"])
    parser.add_argument("--new-keys", type=int, default=10, help="new keys per upsert")
    parser.add_argument("--updated-keys", type=int, default=10, help="known keys updated per upsert")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-hudi-rs", action="store_true", help="leave hudi-rs out of the checks")
    parser.add_argument("--keep", action="store_true", help="keep the tables (a failed one is always kept)")
    args = parser.parse_args()
    versions = [int(v) for v in args.versions.split(",") if v]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    work = tempfile.mkdtemp(prefix="hoodie_soak_")
    per_version = args.minutes * 60 / len(versions)
    runs = [run_version(work, v, args.table_type, per_version, args) for v in versions]
    failed = any(r["failure"] for r in runs)
    if not failed and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, f"soak_{args.minutes:g}min.json")
    figures = {"minutes": args.minutes, "table_type": args.table_type, "new_keys": args.new_keys,
               "updated_keys": args.updated_keys, "seed": args.seed, "hudi_rs": not args.no_hudi_rs,
               "round": SOAK_ROUND, "settings": "Hudi defaults (clean, compaction, archival)",
               "started": started,
               "runs": runs, "ok": not failed}
    with open(path, "w") as fh:
        json.dump(figures, fh, indent=1)
    print(json.dumps({"ok": not failed, "report": path,
                      "rounds": {r["version"]: r["rounds"] for r in runs}}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
