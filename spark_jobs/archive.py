"""spark-submit job: archive old instants into .hoodie/archived (no Spark work needed).

    spark-submit spark_jobs/archive.py --base-path PATH [--hoodie-conf hoodie.keep.min.commits=20 ...]

Refuses hoodie.keep.min.commits <= hoodie.cleaner.commits.retained (as Hudi does).
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401 - shipped with --py-files under spark-submit
except ImportError:  # run from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.spark.job import base_parser, load_config, run_job, storage_options  # noqa: E402


def _executor(args, app: str):
    """Spark tasks, or in-process with --local (small tables, tests)."""
    if getattr(args, "local", False):
        from airflow_hoodie.actions.executor import LocalExecutor

        return LocalExecutor()
    from airflow_hoodie.spark.executor import SparkExecutor
    from airflow_hoodie.spark.session import get_or_create_session

    return SparkExecutor(get_or_create_session(app, master=args.spark_master))


def _config(args):
    """Settings from --props/--hoodie-conf; unknown hoodie.* keys (typos) are reported on stderr."""
    import airflow_hoodie.actions.archive  # noqa: F401 - registers the keys each service reads
    import airflow_hoodie.actions.clean  # noqa: F401
    import airflow_hoodie.actions.clustering  # noqa: F401
    import airflow_hoodie.actions.compaction  # noqa: F401

    config = load_config(args)
    unknown = config.unknown_keys()
    if unknown:
        print("WARNING: unknown hoodie.* settings (ignored): " + ", ".join(unknown), file=sys.stderr, flush=True)
    return config


def _table(args):
    from airflow_hoodie.table.hoodie_table import HoodieTable

    return HoodieTable.load(args.base_path, storage_options(args) or None)


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Archive instants beyond hoodie.keep.max.commits.")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.archive import run_archive

        return run_archive(_table(args), _config(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
