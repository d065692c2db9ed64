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

from airflow_hoodie.spark.job import base_parser, load_table, run_job, service_config  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Archive instants beyond hoodie.keep.max.commits.")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.archive import run_archive

        return run_archive(load_table(args), service_config(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
