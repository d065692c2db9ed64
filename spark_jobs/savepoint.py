"""spark-submit job: create or delete a savepoint (timeline only, no Spark work).

    spark-submit spark_jobs/savepoint.py --base-path PATH --instant-time T [--delete | --restore] [--user U] [--comments C]

--restore rolls the table back to T (Hudi's restore: one rollback per later instant, then T'.restore).
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401 - shipped with --py-files under spark-submit
except ImportError:  # run from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.spark.job import base_parser, load_config, load_table, run_job  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Create or delete a savepoint.")
    parser.add_argument("--instant-time", required=True, help="Completed commit to savepoint")
    parser.add_argument("--delete", action="store_true", help="Delete the savepoint instead")
    parser.add_argument("--restore", action="store_true", help="Restore the table to this instant")
    parser.add_argument("--user", default="", help="savepointedBy")
    parser.add_argument("--comments", default="", help="Savepoint comments")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.savepoint import create_savepoint, delete_savepoint

        table = load_table(args)
        if args.restore:
            from airflow_hoodie.actions.restore import restore_to

            return restore_to(table, args.instant_time, load_config(args))
        if args.delete:
            return delete_savepoint(table, args.instant_time, load_config(args))
        return create_savepoint(table, args.instant_time, args.user, args.comments, load_config(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
