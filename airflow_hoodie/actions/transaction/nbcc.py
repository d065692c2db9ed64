"""Hudi 1.x's non-blocking concurrency control (NBCC, RFC-66) on the write path: which
tables may run it, and which writes still check conflicts.

With ``hoodie.write.concurrency.mode=NON_BLOCKING_CONCURRENCY_CONTROL`` writers of one
MERGE_ON_READ simple-bucket table overlap freely: every record of a bucket goes to that
bucket's one file group (a new bucket's group under the fixed NBCC file id, so two writers
creating it name the same group) and only as log files, never a base file. Logs of
overlapping writers are not a conflict: a reader and the compaction planner slice each log by
its delta commit's *completion* time (table version 8+), and records of one key merge by
their ordering value. So no writer fails on another; the table lock orders only the timeline
steps (instant time, completion time, the services' plans).

The facts, from Hudi 1.x:

- ``HoodieWriteConfig.Builder.validate``: NBCC requires a MERGE_ON_READ table with the simple
  bucket index (``isSimpleBucketIndex``) unless it is a metadata table; multi-writer modes
  need the LAZY failed-writes policy (Hudi's ``autoAdjustConfigsForConcurrencyMode`` sets it;
  an explicit EAGER is refused in :mod:`airflow_hoodie.settings.lock`).
- ``HoodieTableConfigUtils``-side validation (``validateTableVersion``): NBCC is not supported
  on table versions below 8, which slice by instant time.
- ``HoodieWriteConfig.needResolveWriteConflict``: under NBCC only a bulk_insert checks
  conflicts (it writes base files); every other operation commits unchecked.
- ``BucketIdentifier.newBucketFileIdForNBCC`` and the Spark/Flink bucket partitioners: a new
  bucket's group is ``%08d-0000-0000-0000-000000000000-0`` and written as an UPDATE (a log).
"""

from __future__ import annotations

from airflow_hoodie.config_keys.concurrency import CONCURRENCY_MODE, NBCC
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.settings.lock import LockSettings

#: the first table version that slices logs by completion time (Hudi 1.0's layout)
MIN_TABLE_VERSION = 8
MERGE_ON_READ = "MERGE_ON_READ"


def needs_conflict_check(lock: LockSettings, operation: str) -> bool:
    """Whether a write's commit runs the conflict check: with NBCC only for a bulk_insert
    (Hudi's needResolveWriteConflict); in the other modes as before (always: a single
    writer's check catches the writer it refused to start beside, had one slipped in)."""
    if lock.is_nbcc:
        return operation == "bulk_insert"
    return True


def check_nbcc_write(lock: LockSettings, table_type: str, index_type: str, bucket_engine: str | None,
                     table_version: int) -> None:
    """Refuse NBCC where its guarantees do not hold, before anything is written: on a
    COPY_ON_WRITE table two writers would each write a new base file of one group (one of
    them lost); with any other index two writers could put one key in two groups; on a
    version 6 table a log is sliced by its instant time, so a log completed after a
    compaction was planned would be merged into nothing. No-op unless the mode is NBCC."""
    if not lock.is_nbcc:
        return
    if (table_type or "").upper() != MERGE_ON_READ:
        raise HoodieNotSupportedError(
            f"{CONCURRENCY_MODE}={NBCC} needs a MERGE_ON_READ table, and this one is {table_type}: its writers "
            "would each write a new base file of the same file group. Nothing was written. Use "
            "OPTIMISTIC_CONCURRENCY_CONTROL on a COPY_ON_WRITE table, or write a MERGE_ON_READ table.")
    if (index_type or "").upper() != "BUCKET" or (bucket_engine or "SIMPLE").upper() != "SIMPLE":
        shown = index_type if (index_type or "").upper() != "BUCKET" else f"BUCKET with engine {bucket_engine}"
        raise HoodieConfigError(
            f"{CONCURRENCY_MODE}={NBCC} needs the simple bucket index (hoodie.index.type=BUCKET, "
            f"hoodie.index.bucket.engine=SIMPLE), but this write uses {shown}: only a fixed key-to-bucket mapping "
            "lets concurrent writers put every key in the same file group. Nothing was written. Set "
            "hoodie.index.type=BUCKET and hoodie.bucket.index.num.buckets as the table's other writers do, or use "
            "OPTIMISTIC_CONCURRENCY_CONTROL.")
    if table_version < MIN_TABLE_VERSION:
        raise HoodieNotSupportedError(
            f"{CONCURRENCY_MODE}={NBCC} is not supported on table version {table_version} (Hudi: \"Non-blocking "
            f"concurrency control is not supported for table versions < {MIN_TABLE_VERSION}\"): version "
            f"{table_version} slices log files by instant time, not completion time. Nothing was written. Use "
            "OPTIMISTIC_CONCURRENCY_CONTROL on this table.")
