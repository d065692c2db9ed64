"""spark-submit job: roll back a write instant (a pending one, or the latest completed write).

    spark-submit spark_jobs/rollback.py --base-path PATH [--instant-time T]

Without --instant-time the latest write instant is rolled back. The last stdout line is
the JSON result (rollback instant, rolled back instant).
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.spark.job import base_parser, load_config, run_job, storage_options  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Roll back a Hudi write instant.")
    parser.add_argument("--instant-time", help="Instant to roll back (default: the latest write)")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.rollback import rollback_latest_or
        from airflow_hoodie.actions.write_identity import with_write_id
        from airflow_hoodie.table.hoodie_table import HoodieTable

        # the caller's identity: a retry of "roll back the latest write" finds its own rollback
        config = with_write_id(load_config(args), args.write_id)
        table = HoodieTable.load(args.base_path, storage_options(args) or None)
        return rollback_latest_or(table, args.instant_time, config)

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
