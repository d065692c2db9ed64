"""The README's demo: the example DAGs, end to end, on the embedded default.

A throwaway ``AIRFLOW_HOME`` with SQLite, the DAGs in ``dags_examples/`` run through
``airflow dags test`` (so every task spark-submits a real job script on local Spark), and
the Hudi table they leave behind printed: timeline, file slices and row counts, read by
our reader and by hudi-rs. Kept as a module rather than a shell script so the same
command works wherever the package is installed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
INGEST_DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")


def _bin(name: str) -> str:
    candidate = pathlib.Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


#: lines of a step's log worth showing: the jobs' progress, nothing-to-do reasons, results
_WHAT_HAPPENED = re.compile(r"(hoodie: .*?|\S+: nothing to do on .*?|\| (?:instant|action|inserts|updates|"
                            r"deletes|files_written) .*?)(?:\s+\[[\w.]+\].*)?$")


def _what_happened(log_text: str) -> list[str]:
    return [m.group(1).strip() for line in log_text.splitlines() if (m := _WHAT_HAPPENED.search(line))]


#: the longest the demo stays silent while a step runs: a user waiting 100 s without a line
#: cannot tell a slow Spark start from a hang
HEARTBEAT_SECONDS = 20.0


def _run(cmd: list[str], env: dict[str, str], log_dir: pathlib.Path, label: str,
         heartbeat: float = HEARTBEAT_SECONDS) -> None:
    """Run one step, keeping its (long) output in a log file and showing what it does as it
    happens, with a line at least every ``heartbeat`` seconds."""
    log = log_dir / f"{label}.log"
    print(f"  {label} ...", flush=True)
    started = last_line = time.monotonic()
    poll = min(1.0, heartbeat / 4)
    pending = ""
    with open(log, "w", encoding="utf-8") as out, open(log, encoding="utf-8", errors="replace") as follow:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        while True:
            try:
                proc.wait(timeout=poll)
            except subprocess.TimeoutExpired:
                pass
            pending += follow.read()
            complete, _, pending = pending.rpartition("\n")
            now = time.monotonic()
            for line in _what_happened(complete):
                print(f"      {line}", flush=True)
                last_line = now
            if proc.poll() is not None:
                pending += follow.read()  # what it wrote after the last read
                break
            if now - last_line >= heartbeat:
                print(f"      ... {label}: still running ({now - started:.0f} s)", flush=True)
                last_line = now
    for line in _what_happened(pending):
        print(f"      {line}", flush=True)
    took = time.monotonic() - started
    # `airflow dags test` can exit 0 for a run whose tasks failed: check the run's state too
    failed_run = re.search(r"DagRun Finished:.*state=failed", log.read_text(encoding="utf-8", errors="replace"))
    if proc.returncode != 0 or failed_run:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
        print("\n".join(tail), file=sys.stderr)
        raise SystemExit(f"demo step {label!r} failed (exit {proc.returncode}); full log: {log}")
    print(f"  {label:<40} ok  {took:6.1f}s", flush=True)


def _env(work: pathlib.Path, dags: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(work / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{work / 'airflow' / 'airflow.db'}",
            "HOODIE_EXAMPLE_BASE_DIR": str(work),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    return env


def _report(table_path: str) -> None:
    """Print what the DAGs left behind, through our reader and through hudi-rs."""
    from airflow_hoodie.table import read_table
    from airflow_hoodie.table.hoodie_table import HoodieTable

    table = HoodieTable.load(table_path)
    print(f"\nTable {table_path} ({table.table_type})")
    print("\nTimeline (active):")
    for instant in table.timeline.instants:
        print(f"  {instant.timestamp}  {instant.action:<14} {instant.state.name}")
    archived = table.archived_timeline()
    archived_instants = getattr(archived, "instants", [])
    print(f"Archived instants: {len(archived_instants)}")
    view = table.file_system_view()
    slices = view.latest_file_slices()
    print(f"\nLatest file slices: {len(slices)}")
    for s in slices:
        base = s.base_file.file_name if s.base_file else "-"
        print(f"  {s.partition_path or '(none)':<16} {s.file_id[:13]}  base={base[-30:]}  logs={len(s.log_files)}")
    snapshot = read_table(table_path)
    ro = read_table(table_path, query_type="read_optimized")
    print(f"\nRows: snapshot={snapshot.num_rows} read_optimized={ro.num_rows}")
    try:
        from hudi import HudiReadOptions, HudiTableBuilder

        batches = HudiTableBuilder.from_base_uri(table_path).build().read(HudiReadOptions())
        print(f"hudi-rs snapshot rows: {sum(b.num_rows for b in batches)}")
    except ImportError:
        print("hudi-rs not installed; skipped the independent read")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="airflow-hoodie demo", description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", help="Where AIRFLOW_HOME and the table go (default: a new temp dir)")
    parser.add_argument("--keep", action="store_true", help="Keep the temp dir afterwards")
    args = parser.parse_args(argv)

    dags = REPO_ROOT / "dags_examples"
    if not dags.is_dir():
        raise SystemExit(f"example DAGs not found at {dags}; run the demo from a source checkout")
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="airflow-hoodie-demo-")).resolve()
    (work / "airflow").mkdir(parents=True, exist_ok=True)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    env = _env(work, dags)
    airflow = _bin("airflow")
    print(f"airflow-hoodie demo in {work}")
    _run([airflow, "db", "migrate"], env, logs, "airflow db migrate")
    for day in INGEST_DAYS:
        _run([airflow, "dags", "test", "hoodie_example_ingest", day], env, logs, f"ingest {day}")
    _run([airflow, "dags", "test", "hoodie_example_maintenance", INGEST_DAYS[-1]], env, logs,
         f"maintenance {INGEST_DAYS[-1]}")
    _run([airflow, "dags", "test", "hoodie_example_downstream", INGEST_DAYS[-1]], env, logs,
         "downstream (incremental read)")
    os.environ.update({k: env[k] for k in ("AIRFLOW_HOME", "HOODIE_EXAMPLE_BASE_DIR")})
    sys.path.insert(0, str(dags))
    from hoodie_example_common import example_table_path  # type: ignore[import-not-found]

    _report(example_table_path())
    if args.work_dir or args.keep:
        print(f"\nStep logs: {logs}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
