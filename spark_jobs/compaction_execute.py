"""spark-submit job: execute pending compactions (one Spark task per plan operation).

    spark-submit spark_jobs/compaction_execute.py --base-path PATH [--instant-time T] [--local]

Without --instant-time the earliest pending compaction runs (as Hudi's HoodieCompactor
does), so a plan left by a failed earlier run goes first. An inflight one (a crashed
attempt) is rolled back and re-executed from its plan. Completes T.commit.
With --write-id the identity is stored in the commit's extraMetadata, and a retry of a
task that already committed its compaction returns that instant and runs nothing.
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
    parser = base_parser("Execute pending compaction(s).")
    parser.add_argument("--instant-time", help="The compaction instant to execute (default: the earliest pending)")
    parser.add_argument("--local", action="store_true", help="Run operations in-process instead of on Spark")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.compaction import execute_compaction, pending_compaction_instants

        config = with_write_id(service_config(args), args.write_id)
        if args.write_id:
            previous = settle_previous_try(args.base_path, storage_options(args), config, args.write_id)
            if previous is not None:
                print(f"this task already committed compaction {previous['instant']} (a try that ended before "
                      "reporting); nothing executed again", flush=True)
                return previous
        table = load_table(args)
        pending = pending_compaction_instants(table)
        instant = args.instant_time or (pending[0].timestamp if pending else None)
        if instant is None:
            return {"instant": None, "action": "compaction", "reason": "no pending compaction"}
        return execute_compaction(table, instant, job_executor(args, "hoodie-compaction"), config,
                                  storage_options(args))

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
