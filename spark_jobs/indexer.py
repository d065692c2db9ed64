"""spark-submit job: build metadata-table indexes of an existing table (Hudi's HoodieIndexer).

    spark-submit spark_jobs/indexer.py --base-path PATH --index-types RECORD_INDEX,SECONDARY_INDEX \
        --index-name city_idx --index-column city [--mode schedule|execute|scheduleAndExecute] \
        [--instant-time T] [--local] [--hoodie-conf hoodie.metadata.record.index.min.filegroup.count=10]

``schedule`` writes T.indexing.requested and marks the partitions inflight; ``execute`` builds
the plan at ``--instant-time`` (default: the earliest pending one), lists the partitions and
completes T.indexing; ``scheduleAndExecute`` (default) does both. Index types: RECORD_INDEX,
SECONDARY_INDEX (with --index-name and --index-column), COLUMN_STATS, BLOOM_FILTERS,
PARTITION_STATS. Prints {"instant": null, "reason": ...} when every index asked for exists.
A secondary index's file slices are read as Spark tasks (``--local``: in-process); the driver
sorts the entries into their file groups and writes the metadata table's HFiles.
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401 - shipped with --py-files under spark-submit
except ImportError:  # run from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.spark.job import base_parser, job_executor, load_table, run_job, service_config  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Build metadata-table indexes (record index, secondary index, statistics).")
    parser.add_argument("--mode", "--operation", dest="mode", default="scheduleAndExecute",
                        choices=["schedule", "execute", "scheduleAndExecute"])
    parser.add_argument("--index-types", required=True,
                        help="Comma-separated: RECORD_INDEX, SECONDARY_INDEX, COLUMN_STATS, BLOOM_FILTERS, "
                             "PARTITION_STATS")
    parser.add_argument("--index-name", help="SECONDARY_INDEX: the index name (partition secondary_index_<name>)")
    parser.add_argument("--index-column", help="SECONDARY_INDEX: the column it indexes")
    parser.add_argument("--instant-time", help="execute: the indexing instant (default: the earliest pending)")
    parser.add_argument("--local", action="store_true", help="Read the file slices in-process instead of on Spark")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.indexer import run_indexer

        # a secondary index reads every latest file slice: one Spark task each
        spread = args.mode != "schedule" and "SECONDARY_INDEX" in args.index_types.upper()
        executor = job_executor(args, "hoodie-indexer") if spread else None
        return run_indexer(load_table(args), service_config(args), args.mode, args.index_types, args.index_name,
                           args.index_column, args.instant_time, executor)

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
