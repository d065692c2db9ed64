"""spark-submit job: schedule a compaction on a MERGE_ON_READ table.

    spark-submit spark_jobs/compaction_plan.py --base-path PATH [--instant-time T] [--force]
        [--hoodie-conf hoodie.compact.inline.trigger.strategy=NUM_COMMITS ...] [--result-file F]

Writes T.compaction.requested (Hudi's Avro HoodieCompactionPlan) when the trigger strategy
says so and some file slice has log files; otherwise prints {"instant": null, "reason": ...}.
Planning reads only the timeline and a file listing, so no SparkSession is started.
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
    parser = base_parser("Schedule a compaction (writes INSTANT.compaction.requested).")
    parser.add_argument("--instant-time", help="Instant time to use (default: now)")
    parser.add_argument("--force", action="store_true", help="Ignore the trigger strategy")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.compaction import schedule_compaction

        return schedule_compaction(load_table(args), service_config(args), args.instant_time, args.force).as_result()

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
