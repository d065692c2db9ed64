"""Shared fixtures: the conformance corpus and one SparkSession per test session."""

from __future__ import annotations

import logging
import os
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

# The standard AWS environment of the S3 tests (moto accepts any keys), set before anything
# starts: the session's one SparkSession forks its Python workers from a daemon that keeps
# the environment it started with, and an S3 source is read inside those workers. Set only
# when tests/s3/moto_server.py first ran, it reached no worker of a session an earlier test
# had started (ACCESS_DENIED in the whole-suite run, green alone).
for _key, _value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                     ("AWS_DEFAULT_REGION", "us-east-1")):
    os.environ.setdefault(_key, _value)


def conformance_dir() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("HOODIE_CONFORMANCE_DIR", REPO_ROOT.parent / "shared" / "conformance")
    ).resolve()


def conformance_next_dir() -> pathlib.Path:
    """Tables written by Hudi 1.0/1.1 (table versions 8 and 9) and newer 0.x features."""
    return pathlib.Path(
        os.environ.get("HOODIE_CONFORMANCE_NEXT_DIR", REPO_ROOT.parent / "shared" / "conformance-next")
    ).resolve()


def _corpus(root: pathlib.Path, env: str) -> pathlib.Path:
    if not root.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"conformance corpus missing at {root}; set {env}")
        pytest.skip(f"conformance corpus not found at {root}")
    return root


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep what a test session shares on one worker when pytest-xdist splits the suite (the
    README's test command runs it on two workers with ``--dist loadgroup``): every test of the
    shared SparkSession runs on one worker, so a session still starts one SparkSession, and the
    tests of a module with a module-scoped server (the Airflow api-server of the health page)
    share a worker, so the server starts once. Without xdist the marks do nothing."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs if info is not None else {}
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif any(d and d[-1].scope == "module" for d in defs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.fixture(scope="session")
def conformance_next() -> pathlib.Path:
    """Root of the Hudi 1.x corpus; required under CI, never skipped there."""
    return _corpus(conformance_next_dir(), "HOODIE_CONFORMANCE_NEXT_DIR")


@pytest.fixture(scope="session")
def conformance() -> pathlib.Path:
    """Root of the tables real Hudi wrote; required under CI, never skipped there."""
    root = conformance_dir()
    if not root.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"conformance corpus missing at {root}; set HOODIE_CONFORMANCE_DIR")
        pytest.skip(f"conformance corpus not found at {root}")
    return root


@pytest.fixture(scope="session")
def spark():
    """The single SparkSession every Spark test shares (starting one costs ~8 s)."""
    from airflow_hoodie.spark.session import get_or_create_session

    # tiny test data: a few fixed partitions and no UI start faster than Spark's defaults
    session = get_or_create_session("airflow-hoodie-tests", master="local[2]", conf={
        "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4", "spark.ui.enabled": "false"})
    yield session
    session.stop()
    # py4j logs "Closing down clientserver connection" from __del__ at interpreter exit,
    # after pytest closed the log stream; that prints a bogus "Logging error" traceback.
    logging.getLogger("py4j").setLevel(logging.WARNING)
