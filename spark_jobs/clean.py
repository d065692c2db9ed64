"""spark-submit job: clean old file slices (hoodie.cleaner.policy and its retention setting).

    spark-submit spark_jobs/clean.py --base-path PATH [--hoodie-conf hoodie.cleaner.commits.retained=10] [--local]

Finishes a pending clean first; otherwise plans (T.clean.requested), deletes as Spark tasks,
completes T.clean. Prints {"instant": null, "reason": ...} when nothing is out of retention.
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401 - shipped with --py-files under spark-submit
except ImportError:  # run from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.spark.job import base_parser, job_executor, load_table, run_job, service_config, storage_options  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Clean file slices out of retention.")
    parser.add_argument("--local", action="store_true", help="Delete in-process instead of on Spark")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.clean import run_clean

        return run_clean(load_table(args), service_config(args), job_executor(args, "hoodie-clean"), storage_options(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
