"""spark-submit job: execute pending compactions (one Spark task per plan operation).

    spark-submit spark_jobs/compaction_execute.py --base-path PATH [--instant-time T] [--local]

Without --instant-time every pending compaction runs, oldest first. An inflight one (a
crashed attempt) is rolled back and re-executed from its plan. Completes T.commit.
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
    parser = base_parser("Execute pending compaction(s).")
    parser.add_argument("--instant-time", help="The compaction instant to execute (default: all pending)")
    parser.add_argument("--local", action="store_true", help="Run operations in-process instead of on Spark")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.compaction import execute_pending_compactions, pending_compaction_instants

        table = _table(args)
        if not args.instant_time and not pending_compaction_instants(table):
            return {"instant": None, "action": "compaction", "reason": "no pending compaction"}
        return execute_pending_compactions(table, _executor(args, "hoodie-compaction"), _config(args),
                                           args.instant_time, storage_options(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
