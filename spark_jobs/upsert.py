"""spark-submit job: write one batch into a Hudi table (creating it on first write).

    spark-submit spark_jobs/upsert.py --base-path PATH --table-name NAME \\
        --source PATH --source-format parquet|json|csv|orc [--source-storage-option KEY=VALUE ...] \\
        --operation insert|upsert|bulk_insert|delete|insert_overwrite|insert_overwrite_table \\
        [--hoodie-conf KEY=VALUE ...] [--props FILE] [--result-file FILE]

Also runs as ``python spark_jobs/upsert.py ...`` (local Spark). The last stdout line is
the JSON result (instant, action, state, operation, write totals).
"""

from __future__ import annotations

import os
import sys

try:
    import airflow_hoodie  # noqa: F401 - shipped with --py-files under spark-submit
except ImportError:  # run from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.actions.write_identity import settle_previous_try, with_write_id  # noqa: E402
from airflow_hoodie.spark.job import (  # noqa: E402
    base_parser,
    load_config,
    run_job,
    source_storage_options,
    storage_options,
)


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("Write a batch into a Hudi table (Hudi's write client flow on Spark).")
    parser.add_argument("--table-name", help="Table name (required when the table does not exist yet)")
    parser.add_argument("--source", required=True, help="Input path (file or directory)")
    parser.add_argument("--source-format", default="parquet", help="parquet, json, csv or orc")
    parser.add_argument("--source-storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Storage option of a source on another bucket or store (default: the table's "
                             "--storage-option values); repeatable")
    parser.add_argument("--operation", default="upsert",
                        help="insert, upsert, bulk_insert, delete, insert_overwrite, insert_overwrite_table")
    args = parser.parse_args(argv)

    def job() -> dict:
        from airflow_hoodie.actions.write_settings import WriteRequest
        from airflow_hoodie.errors import HoodieConfigError
        from airflow_hoodie.spark.dataframe_write import upsert_dataframe
        from airflow_hoodie.spark.session import get_or_create_session
        from airflow_hoodie.spark.source import (
            SOURCE_FORMATS,
            load_source,
            require_source,
        )

        config = with_write_id(load_config(args), args.write_id)
        # cheap checks first: a bad call fails in a second, before a JVM starts
        request = WriteRequest.from_config(config, args.operation)
        if args.source_format.lower() not in SOURCE_FORMATS:
            raise HoodieConfigError(f"--source-format {args.source_format!r} is not one of {', '.join(SOURCE_FORMATS)}.")
        source_options = source_storage_options(args)
        require_source(args.source, source_options)
        unknown = config.unknown_keys()
        if unknown:
            print("WARNING: unknown hoodie.* settings (ignored): " + ", ".join(unknown), file=sys.stderr, flush=True)
        if args.write_id:
            previous = settle_previous_try(args.base_path, storage_options(args), config, args.write_id)
            if previous is not None:
                print(f"this task already committed {previous['instant']} (a try that ended before reporting); "
                      "nothing written again", flush=True)
                return previous
        table_name = args.table_name or config.get("hoodie.table.name")
        spark = get_or_create_session(f"hoodie-upsert-{table_name or 'table'}", master=args.spark_master)
        source = load_source(spark, args.source, args.source_format, storage_options=source_options)
        result = upsert_dataframe(spark, source.df, args.base_path, request, config, table_name,
                                  storage_options(args), source.size_bytes)
        return result.as_dict()

    return run_job(job, args.result_file)


if __name__ == "__main__":
    sys.exit(main())
