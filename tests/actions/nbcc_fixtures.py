"""Test helpers for non-blocking concurrency control: the table settings, and a writer that
writes delta commits the way Hudi's Flink NBCC writer does.

:class:`FlinkLikeWriter` takes Flink's default lock (no provider named, several writers:
``FileSystemBasedLockProvider.getLockConfig`` -> ``<base>/.hoodie/.aux/lock``), takes its instant
time under it, writes each bucket's records as one log file of the bucket's fixed NBCC group
(``%08d-0000-0000-0000-000000000000-0``, ``.<fid>_<instant>.log.1_<token>``), and completes under
the lock with its completion time in the completed file's name (v8/v9). Its two halves are
separate calls, so a test can interleave them with other writers and services: a delta
commit that starts before a compaction is planned and completes after it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.file_group_write import write_stat
from airflow_hoodie.actions.transaction.service_transaction import transaction_manager_for
from airflow_hoodie.actions.write_client import commit_metadata
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.bucket_index import bucket_ids, nbcc_bucket_file_id
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.file_group.base_file_writer import stamp_meta_columns, with_meta_fields
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.data_block import avro_data_block
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.schema.table_schema import latest_avro_schema
from airflow_hoodie.table.timeline.instant import Instant, State

NBCC = "NON_BLOCKING_CONCURRENCY_CONTROL"
NUM_BUCKETS = 4


def nbcc_settings(version: int = 9, **extra: str) -> dict[str, str]:
    """A MOR simple-bucket table written with NBCC and no lock provider named: the engines'
    default file-system lock, the one Flink's writers take."""
    return {"hoodie.table.name": "nbcc", "hoodie.table.type": "MERGE_ON_READ",
            "hoodie.write.table.version": str(version),
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(NUM_BUCKETS),
            "hoodie.write.concurrency.mode": NBCC,
            "hoodie.client.heartbeat.interval_in_ms": "1000", "hoodie.client.heartbeat.tolerable.misses": "3",
            "hoodie.time.generator.max_expected_clock_skew_ms": "0", **extra}


@dataclass
class PendingDeltaCommit:
    """A Flink-like delta commit whose logs are written and whose instant is still inflight."""

    instant: str
    stats: list[dict[str, Any]] = field(default_factory=list)


class FlinkLikeWriter:
    """Delta commits as Flink's NBCC bucket writer makes them (module docstring)."""

    def __init__(self, base: str, settings: dict[str, str] | None = None) -> None:
        self.base = base
        self.config = HoodieConfig(settings or nbcc_settings())
        self.lock = LockSettings.from_config(self.config)
        assert self.lock.is_nbcc

    def _table(self) -> HoodieTable:
        table = HoodieTable.load(self.base)
        change = _change_settings(self.config)
        commit.use_change_settings(table, change)
        commit.prepare_for_change(table, change)
        return table

    def begin(self, rows: pa.Table) -> PendingDeltaCommit:
        """Take an instant time under the lock, create the requested and inflight instants,
        and write the rows' log files (one per bucket of each partition)."""
        table = self._table()
        tm = transaction_manager_for(table, self.lock)
        with tm.transaction("flink-like: start a delta commit"):
            table.reload_timeline()
            instant = table.new_instant_time()
            tm.heartbeats.start(instant)
            table.timeline_writer().create_requested(Instant(instant, "deltacommit", State.REQUESTED), b"")
        table.timeline_writer().transition_to_inflight(Instant(instant, "deltacommit", State.REQUESTED), b"")
        schema = latest_avro_schema(table.timeline, table.config.get("hoodie.table.create.schema"))
        assert schema is not None, "the table's schema: write it once with our writer first"
        keys = rows.column("id").cast(pa.string())
        buckets = bucket_ids(keys, ["id"], NUM_BUCKETS, table.format.release.bucket_hash_key_parser)
        rows = rows.append_column("_b", pa.array(buckets, pa.int32()))
        pending = PendingDeltaCommit(instant)
        layout = table.format.log_file_layout
        for part in sorted(set(rows.column("p").to_pylist())):
            for bucket in sorted(set(rows.filter(pc.equal(rows.column("p"), part)).column("_b").to_pylist())):
                mine = rows.filter(pc.and_(pc.equal(rows.column("p"), part), pc.equal(rows.column("_b"), bucket)))
                data = mine.drop_columns(["_b"])
                fid = nbcc_bucket_file_id(bucket)
                stamped = stamp_meta_columns(data, data.column("id").cast(pa.string()), part, instant, fid)
                folder = table.storage.join(table.base_path, part)
                table.storage.mkdirs(folder)
                writer = LogWriter.for_instant(table.storage, folder, fid, None, instant, f"{bucket}-1-0", layout)
                try:
                    results = writer.append([avro_data_block(stamped, with_meta_fields(schema), instant)])
                finally:
                    writer.close()
                name = results[0].log_path.rsplit("/", 1)[-1]
                pending.stats.append(write_stat(
                    fileId=fid, path=f"{part}/{name}", prevCommit=instant, numWrites=data.num_rows,
                    numUpdateWrites=0, numInserts=data.num_rows, numDeletes=0,
                    totalWriteBytes=sum(r.size for r in results), partitionPath=part, totalLogBlocks=len(results),
                    fileSizeInBytes=table.storage.size(results[0].log_path), logVersion=1,
                    logOffset=results[0].offset, baseFile="", logFiles=[name]))
        return pending

    def complete(self, pending: PendingDeltaCommit) -> Instant:
        """Complete under the lock: Flink's NBCC writer checks no conflict; the completion time
        is taken under the lock and lands in the completed file's name."""
        table = self._table()
        tm = transaction_manager_for(table, self.lock)
        schema = latest_avro_schema(table.timeline, table.config.get("hoodie.table.create.schema"))
        meta = commit_metadata(pending.stats, "upsert", json.dumps(schema), None, {})
        for part in {st["partitionPath"] for st in pending.stats}:
            write_partition_metadata(table.storage, table.base_path, part, pending.instant)
        with tm.transaction(f"flink-like: commit {pending.instant}"):
            table.reload_timeline()
            done = commit.complete(table, Instant(pending.instant, "deltacommit", State.INFLIGHT), meta)
        tm.heartbeats.stop(pending.instant)
        return done


def _change_settings(config: HoodieConfig) -> Any:
    from airflow_hoodie.settings.change import ChangeSettings

    return ChangeSettings.from_config(config)
