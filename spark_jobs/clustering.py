"""spark-submit job: clustering (schedule, execute or both).

    spark-submit spark_jobs/clustering.py --base-path PATH --mode schedule|execute|scheduleAndExecute
        [--instant-time T] [--hoodie-conf hoodie.clustering.plan.strategy.sort.columns=col ...] [--local]

schedule writes T.replacecommit.requested (HoodieRequestedReplaceMetadata with the plan);
execute rewrites each group (one Spark task each) and completes T.replacecommit; without
--instant-time it runs the earliest pending clustering (as Hudi's HoodieClusteringJob does).
With --write-id (execute and scheduleAndExecute) the identity is stored in the
replacecommit's extraMetadata, and a retry of a task whose clustering committed returns
that instant and clusters nothing again.
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401 - shipped with --py-files under spark-submit
except ImportError:  # run from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.actions.write_identity import settle_previous_try, with_write_id  # noqa: E402
from airflow_hoodie.spark.job import base_parser, job_executor, load_table, run_job, service_config, storage_options  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Schedule and/or execute clustering.")
    parser.add_argument("--mode", default="scheduleAndExecute", choices=["schedule", "execute", "scheduleAndExecute"])
    parser.add_argument("--instant-time", help="Instant to schedule as / execute")
    parser.add_argument("--local", action="store_true", help="Run groups in-process instead of on Spark")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.clustering import pending_clustering_instants, run_clustering

        write_id = None if args.mode == "schedule" else args.write_id  # a plan records no identity
        config = with_write_id(service_config(args), write_id)
        if write_id:
            previous = settle_previous_try(args.base_path, storage_options(args), config, write_id)
            if previous is not None:
                print(f"this task already committed clustering {previous['instant']} (a try that ended before "
                      "reporting); nothing clustered again", flush=True)
                return previous
        table = load_table(args)
        executor = None if args.mode == "schedule" else job_executor(args, "hoodie-clustering")
        instant = args.instant_time
        if args.mode == "execute" and not instant:
            pending = pending_clustering_instants(table)
            instant = pending[0].timestamp if pending else None
        return run_clustering(table, config, executor, args.mode, instant, storage_options(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
