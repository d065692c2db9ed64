"""Airflow test set-up: a throwaway AIRFLOW_HOME and SQLite metadata DB, made once per session.

The environment must be set before anything imports ``airflow`` (its settings are read
at import), which is why this happens at module import time of this conftest.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys
import tempfile
import textwrap

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags_examples"

_HOME = pathlib.Path(tempfile.mkdtemp(prefix="airflow-hoodie-home-"))
#: dag.test() only runs DAGs found in the dags folder: the examples are linked in, and
#: tests drop their own DAG files next to them.
TEST_DAGS = _HOME / "dags"
TEST_DAGS.mkdir()
for _example in DAGS_FOLDER.glob("*.py"):
    (TEST_DAGS / _example.name).symlink_to(_example)
os.environ["AIRFLOW_HOME"] = str(_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(TEST_DAGS)
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_HOME / 'airflow.db'}"
os.environ.setdefault("HOODIE_EXAMPLE_BASE_DIR", str(_HOME / "hoodie_example"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def airflow_db():
    """Create the metadata DB once (a few hundred ms on SQLite)."""
    from airflow.utils import db

    db.resetdb(skip_init=False)
    yield
    shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture
def fake_jobs_dir(tmp_path, monkeypatch):
    """A jobs directory of tiny job scripts using the real job harness (spark/job.py).

    ``ok.py`` prints a JSON result; ``fail.py`` fails like a real job; ``noop.py``
    reports nothing to do. Tests name them as any operator's ``job``. The stand-ins answer
    for tables that do not exist, so the services' table check before submit is off here
    (tests/airflow/test_service_check.py tests it against real tables).
    """
    monkeypatch.setattr("airflow_hoodie.operators.hoodie_base.check_service", lambda *args, **kwargs: None)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    header = textwrap.dedent(
        """
        import json, sys
        from airflow_hoodie.spark.job import base_parser, run_job
        from airflow_hoodie.errors import HoodieError
        parser = base_parser("fake job")
        parser.add_argument("--instant-time")
        parser.add_argument("--mode")
        args, rest = parser.parse_known_args()
        """
    )
    (jobs / "ok.py").write_text(header + textwrap.dedent(
        """
        print("some spark chatter")
        sys.exit(run_job(lambda: {"instant": "20240101000000000", "action": "commit",
                                   "state": "COMPLETED", "base_path": args.base_path,
                                   "conf": args.hoodie_conf, "rest": rest,
                                   "instant_arg": args.instant_time}, args.result_file))
        """
    ))
    (jobs / "fail.py").write_text(header + textwrap.dedent(
        """
        def main():
            raise HoodieError("record key field 'uuid' is missing from the source; set "
                              "hoodie.datasource.write.recordkey.field")
        sys.exit(run_job(main, args.result_file))
        """
    ))
    (jobs / "noop.py").write_text(header + textwrap.dedent(
        """
        sys.exit(run_job(lambda: {"instant": None, "reason": "no file slice has log files"},
                         args.result_file))
        """
    ))
    monkeypatch.setenv("AIRFLOW_HOODIE_JOBS_DIR", str(jobs))
    return jobs


def load_dag_file(name: str, source: str):
    """Write a DAG file into the dags folder and return its DAG (dag.test() needs both)."""
    import importlib.util

    path = TEST_DAGS / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"test_dag_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def make_job(jobs_dir: pathlib.Path, name: str, like: str) -> None:
    """Make ``jobs_dir/<name>.py`` behave like one of the fake jobs (ok, fail, noop)."""
    (jobs_dir / f"{name}.py").write_text((jobs_dir / f"{like}.py").read_text())


def write_timeline(base: pathlib.Path, files: dict[str, bytes] | list[str], table_type: str = "MERGE_ON_READ") -> pathlib.Path:
    """A table whose ``.hoodie/`` holds exactly the given instant files (no data needed)."""
    meta = base / ".hoodie"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "hoodie.properties").write_text(
        f"hoodie.table.name=t\nhoodie.table.type={table_type}\nhoodie.table.version=6\n"
    )
    items = files.items() if isinstance(files, dict) else ((name, b"") for name in files)
    for name, content in items:
        (meta / name).write_bytes(content)
    return base
