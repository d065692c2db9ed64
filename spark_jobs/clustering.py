"""spark-submit job: clustering (schedule, execute or both).

    spark-submit spark_jobs/clustering.py --base-path PATH --mode schedule|execute|scheduleAndExecute
        [--instant-time T] [--hoodie-conf hoodie.clustering.plan.strategy.sort.columns=col ...] [--local]

schedule writes T.replacecommit.requested (HoodieRequestedReplaceMetadata with the plan);
execute rewrites each group (one Spark task each) and completes T.replacecommit.
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
    parser = base_parser("Schedule and/or execute clustering.")
    parser.add_argument("--mode", default="scheduleAndExecute", choices=["schedule", "execute", "scheduleAndExecute"])
    parser.add_argument("--instant-time", help="Instant to schedule as / execute")
    parser.add_argument("--local", action="store_true", help="Run groups in-process instead of on Spark")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.clustering import run_clustering

        table = _table(args)
        executor = None if args.mode == "schedule" else _executor(args, "hoodie-clustering")
        return run_clustering(table, _config(args), executor, args.mode, args.instant_time, storage_options(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
