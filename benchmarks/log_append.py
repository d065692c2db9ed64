"""Benchmark (not a test): a MERGE_ON_READ upsert that appends its updates to log files.

    .venv/bin/python benchmarks/log_append.py [--rows 1000000] [--batch 100000] [--repeat 5]

The upsert benchmark's workload (``--batch`` records, 20% updates, into ``--rows``) on a
MERGE_ON_READ table whose files are not small (``hoodie.parquet.small.file.limit=0``), so
each updated file group gets an Avro data block in its log and the inserts go to new file
groups, through the in-process write flow (``write_arrow``: the engine of the Spark
driver path). Each run starts from a fresh copy of one loaded table. Reported: medians of
the upsert's wall and CPU seconds, and the CPU of encoding its data blocks' records in
bulk (``avro_batch_encoder``, what the write uses) against the per-record encoding
(``arrow_to_avro_records`` then fastavro per record, the reference) of the same records.
Writes ``benchmarks/out/log_append.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from benchmarks.upsert import table_and_batch  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from airflow_hoodie.actions.write import write_arrow  # noqa: PLC0415
    from airflow_hoodie.table.log import data_block  # noqa: PLC0415
    from airflow_hoodie.table.log.log_block import writer_schema_json  # noqa: PLC0415
    from airflow_hoodie.table.schema.avro_convert import arrow_to_avro_records  # noqa: PLC0415

    blocks: list[tuple] = []  # (records, schema) of every data block the timed upserts wrote
    inner = data_block.avro_data_block

    def recording(records, avro_schema, *rest, **kw):  # type: ignore[no-untyped-def]
        blocks.append((records, avro_schema))
        return inner(records, avro_schema, *rest, **kw)

    base_rows, batch = table_and_batch(args.rows, args.batch)
    n_upd = args.batch // 5
    cfg = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.index.type": "SIMPLE", "hoodie.parquet.compression.codec": "snappy",
           "hoodie.parquet.small.file.limit": "0"}
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="hoodie-log-append-") as tmp:
        path = os.path.join(tmp, "table")
        write_arrow(path, base_rows, "bulk_insert", cfg, "bench")
        from airflow_hoodie.actions import file_group_write  # noqa: PLC0415
        file_group_write.avro_data_block = recording
        for r in range(args.repeat + 1):  # the first run warms imports and caches
            copy = shutil.copytree(path, f"{path}-{r}")
            blocks.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            res = write_arrow(copy, batch, "upsert", cfg)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            assert res.updates == n_upd and res.inserts == args.batch - n_upd, res
            assert sum(b[0].num_rows for b in blocks) == n_upd, "every update goes to a log block"
            if r:
                walls.append(wall)
                cpus.append(cpu)
            shutil.rmtree(copy)
        file_group_write.avro_data_block = inner

    def encoding_cpu(bulk: bool) -> float:
        runs = []
        for _ in range(args.repeat):
            c0 = time.process_time()
            for records, schema in blocks:
                schema_json = writer_schema_json(schema)
                content = data_block._bulk_avro_content(records, schema_json) if bulk else None
                if content is None:
                    data_block.encode_avro_records(arrow_to_avro_records(records, schema_json), schema_json)
            runs.append(time.process_time() - c0)
        return statistics.median(runs)

    figures = {"upsert_s": statistics.median(walls), "upsert_cpu_s": statistics.median(cpus),
               "log_records": n_upd, "data_blocks": len(blocks),
               "encode_bulk_cpu_s": encoding_cpu(True), "encode_per_record_cpu_s": encoding_cpu(False),
               "load_avg_1min": os.getloadavg()[0]}
    rows = [(f"Avro encoding of {n_upd:,} log records ({len(blocks)} blocks), CPU", figures["encode_bulk_cpu_s"],
             figures["encode_per_record_cpu_s"], "per-record fastavro encoding")]
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()})
    print_table(rows)
    print(f"figures: {write_report('log_append', figures, rows)}")


if __name__ == "__main__":
    main()
