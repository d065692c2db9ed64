"""The indexer: build metadata-table indexes of an existing table as an ``indexing`` instant
(Hudi's HoodieIndexer with ScheduleIndexActionExecutor and RunIndexActionExecutor).

- *schedule* (under the table lock): the partitions to build (those already listed are left
  out; one another indexing is building is refused), each with ``indexUptoInstant``, the
  latest completed instant of the data table, go into ``T.indexing.requested``
  (``HoodieIndexPlan``); they are added to ``hoodie.table.metadata.partitions.inflight``, and a
  secondary index's definition to ``index.json`` (its column is not in the plan).
- *execute* (one task per plan, under the table lock): ``T.indexing.inflight`` (empty, as
  Hudi writes it), then each partition is built from the latest merged file slices. Holding
  the lock, no instant completes meanwhile, so that build covers the plan's instant and
  every instant completed since (Hudi's catch-up); a write still pending completes after the
  partition is listed and must keep it true (one that cannot is stopped by its own commit
  path). Then the partitions move from ``….inflight`` to ``hoodie.table.metadata.partitions``
  and ``T.indexing`` completes with ``HoodieIndexCommitMetadata``.

A run that died is finished by running it again: a partition already listed is not built
twice, and the leftovers of a build that died before listing it are removed first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.index_definition_writer import (
    index_definition,
    put_index_definition,
)
from airflow_hoodie.actions.metadata_table.record_index_writer import (
    initialize_record_index,
)
from airflow_hoodie.actions.metadata_table.secondary_index_build import (
    build_secondary_index,
)
from airflow_hoodie.actions.metadata_table.stats_index_writer import (
    initialize_stats_partitions,
)
from airflow_hoodie.actions.service_common import crash_point
from airflow_hoodie.actions.transaction.service_transaction import (
    executing,
    transaction_manager_for,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.settings.indexer import SECONDARY_INDEX, IndexerSettings
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata_table.files_listing import FILES_PARTITION
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from airflow_hoodie.table.metadata_table.record_index import RECORD_INDEX_PARTITION
from airflow_hoodie.table.metadata_table.secondary_index import (
    SECONDARY_INDEX_PREFIX,
    SECONDARY_INDEX_TYPE,
    index_values,
    secondary_index_definitions,
)
from airflow_hoodie.table.metadata_table.stats_partitions import index_definitions
from airflow_hoodie.table.read import table_schema
from airflow_hoodie.table.timeline.instant import Action, Instant, State

if TYPE_CHECKING:
    from airflow_hoodie.actions.executor import Executor
    from airflow_hoodie.table.hoodie_table import HoodieTable

MODES = ("schedule", "execute", "scheduleAndExecute")
#: HoodieIndexPlan / HoodieIndexPartitionInfo / HoodieIndexCommitMetadata version Hudi 1.x writes
PLAN_VERSION = 1


# ------------------------------------------------------------------------ checks
def _check_secondary_index(table: HoodieTable, partition: str, column: str, todo: Sequence[str]) -> None:
    """A secondary index needs a Hudi 1.x table, a record index (it maps keys to file groups),
    an indexable column, and no other definition under its name."""
    if not table.format.release.records_index_definitions:
        raise HoodieNotSupportedError(
            f"SECONDARY_INDEX on {table.base_uri}: table version {table.format.version} (Hudi 0.x) has no secondary "
            "indexes. They exist from table version 8 (Hudi 1.0); upgrade the table with Hudi first.")
    if RECORD_INDEX_PARTITION not in listed_in(table.config) and RECORD_INDEX_PARTITION not in todo:
        raise HoodieConfigError(
            f"SECONDARY_INDEX on {table.base_uri} needs the record index (a secondary index gives record keys, the "
            "record index their file groups), and the table has none: run the indexer with "
            "--index-types RECORD_INDEX,SECONDARY_INDEX.")
    schema = table_schema(table, table.timeline.completed_commits())
    if schema is None or column not in schema.names:
        raise HoodieConfigError(f"SECONDARY_INDEX column {column!r} is not a column of {table.base_uri}"
                                + (f"; columns: {', '.join(schema.names)}" if schema is not None else "."))
    index_values(pa.array([], schema.field(column).type))  # a type whose text Hudi's writers disagree on is refused
    existing = index_definitions(table).get(partition)
    if existing and list(existing.get("sourceFields") or []) != [column]:
        raise HoodieConfigError(
            f"{partition} of {table.base_uri} already indexes {existing.get('sourceFields')}, not [{column!r}]; pick "
            "another --index-name.")


def _check_metadata_table(table: HoodieTable) -> None:
    if FILES_PARTITION not in listed_in(table.config):
        raise HoodieConfigError(
            f"{table.base_uri} has no metadata table yet: build its files partition first (any write with "
            "hoodie.metadata.enable=true does), then run the indexer. Hudi's indexer refuses the same.")


# ------------------------------------------------------------------------ schedule
def _plan(partitions: Sequence[str], up_to: str | None) -> dict[str, Any]:
    return {"version": PLAN_VERSION, "indexPartitionInfos": [
        {"version": PLAN_VERSION, "metadataPartitionPath": p, "indexUptoInstant": up_to, "extraMetadata": {}}
        for p in partitions]}


def schedule_indexing(table: HoodieTable, settings: IndexerSettings) -> tuple[str | None, list[str], str]:
    """Write ``T.indexing.requested`` for the partitions not yet built: (instant or None,
    partitions planned, reason when none). Under the table lock."""
    tm = transaction_manager_for(table, settings.action.lock)
    with tm.transaction("schedule indexing"):
        config = table.reload_config()
        timeline = table.reload_timeline()
        _check_metadata_table(table)
        listed, inflight = listed_in(config), listed_in(config, METADATA_PARTITIONS_INFLIGHT)
        building = [p for p in settings.partitions if p in inflight]
        if building:
            pending = [i.timestamp for i in timeline.instants if i.action == Action.INDEXING and not i.is_completed]
            raise HoodieConfigError(
                f"{', '.join(building)} of {table.base_uri} is being built by the pending indexing {pending}: run "
                "the indexer with --mode execute to finish it.")
        todo = [p for p in settings.partitions if p not in listed]
        if not todo:
            return None, [], f"already built: {', '.join(settings.partitions)}"
        for kind, partition in zip(settings.index_types, settings.partitions):
            if kind == SECONDARY_INDEX and partition in todo:
                column = settings.secondary_index_column or ""
                _check_secondary_index(table, partition, column, todo)
                put_index_definition(table, index_definition(partition, SECONDARY_INDEX_TYPE, "identity", [column],
                                                             table.format.release.secondary_index_version or "V2"))
        last = timeline.completed().last()
        instant = Instant(table.new_instant_time(), Action.INDEXING, State.REQUESTED)
        table.timeline_writer().create_requested(
            instant, avro_codec.serialize("HoodieIndexPlan", _plan(todo, last.timestamp if last else None)))
        crash_point("indexing.after_requested")
        table.update_config({METADATA_PARTITIONS_INFLIGHT: ",".join(sorted(set(inflight) | set(todo)))})
        return instant.timestamp, todo, ""


# ------------------------------------------------------------------------ execute
def _build(table: HoodieTable, partition: str, settings: IndexerSettings, executor: Executor | None) -> str:
    """Build one partition from the latest file slices; returns its metadata-table instant."""
    if partition == RECORD_INDEX_PARTITION:
        return initialize_record_index(table, settings.sizing)
    if partition.startswith(SECONDARY_INDEX_PREFIX):
        found = [d for d in secondary_index_definitions(table) if d.name == partition]
        if not found:
            raise HoodieConfigError(
                f"The indexing plan builds {partition}, but .hoodie/.index_defs/index.json of {table.base_uri} "
                "defines no such index; schedule it again (--mode scheduleAndExecute with --index-name and "
                "--index-column).")
        return build_secondary_index(table, found[0], settings.sizing, executor=executor)
    metadata = settings.metadata
    counts = {"column_stats": metadata.column_stats_file_groups, "partition_stats": metadata.partition_stats_file_groups,
              "bloom_filters": metadata.bloom_filter_file_groups}
    if partition not in counts:
        raise HoodieNotSupportedError(
            f"The indexing plan of {table.base_uri} builds {partition}, which airflow-hoodie cannot build; finish it "
            "with Hudi's indexer.")
    return initialize_stats_partitions(table, [partition], {partition: counts[partition]}, metadata)


def _plan_partitions(table: HoodieTable, instant_time: str) -> list[dict[str, Any]]:
    """The ``HoodieIndexPartitionInfo`` records of plan ``instant_time`` (its requested file)."""
    plan = avro_codec.deserialize(table.timeline.read_plan(instant_time), "HoodieIndexPlan")
    return list(plan.get("indexPartitionInfos") or [])


def _plan_names(table: HoodieTable, instant_time: str) -> list[str]:
    return [str(i.get("metadataPartitionPath")) for i in _plan_partitions(table, instant_time)]


def execute_indexing(table: HoodieTable, instant_time: str, settings: IndexerSettings,
                     executor: Executor | None = None) -> dict[str, Any]:
    """Build the partitions of plan ``instant_time``, list them and complete the instant
    (``executor``: where a secondary index's slices are read)."""
    tm = transaction_manager_for(table, settings.action.lock)
    with executing(tm, Action.INDEXING, instant_time), tm.transaction(f"execute indexing {instant_time}"):
        table.reload_config()
        current = table.reload_timeline().get(instant_time, Action.INDEXING)
        if current is None:
            raise HoodieConfigError(f"{table.base_uri} has no indexing instant {instant_time}; schedule one first.")
        infos = _plan_partitions(table, instant_time)
        names = [str(i.get("metadataPartitionPath")) for i in infos]  # the plan's, whatever this run asked
        if current.is_completed:
            return {"instant": instant_time, "action": Action.INDEXING, "state": "COMPLETED", "partitions": names,
                    "built": {}, "reason": "already completed"}
        writer = table.timeline_writer()
        if current.state == State.REQUESTED:
            writer.transition_to_inflight(Instant(instant_time, Action.INDEXING, State.REQUESTED))
        crash_point("indexing.after_inflight")
        built = {p: _build(table, p, settings, executor) for p in names if p not in listed_in(table.config)}
        crash_point("indexing.after_build")
        listed = set(listed_in(table.config)) | set(names)
        inflight = [p for p in listed_in(table.config, METADATA_PARTITIONS_INFLIGHT) if p not in names]
        table.update_config({METADATA_PARTITIONS: ",".join(sorted(listed)),
                             METADATA_PARTITIONS_INFLIGHT: ",".join(inflight)})
        crash_point("indexing.before_commit")
        done = {"version": PLAN_VERSION, "operationType": None, "indexPartitionInfos": infos}
        commit.complete(table, Instant(instant_time, Action.INDEXING, State.INFLIGHT), done, changes_listing=False)
    return {"instant": instant_time, "action": Action.INDEXING, "state": "COMPLETED", "partitions": names,
            "built": built}


def pending_indexing_instants(table: HoodieTable) -> list[Instant]:
    """Pending indexing instants, oldest first (``--mode execute`` without an instant runs the first)."""
    return [i for i in table.reload_timeline().instants if i.action == Action.INDEXING and not i.is_completed]


def _prepare(table: HoodieTable, settings: IndexerSettings) -> None:
    """The checks every change makes before it touches the table, without dropping or refusing
    metadata-table partitions another writer keeps: building indexes is this job's purpose."""
    table.check_writable()
    table.check_no_pending_restore()
    commit.use_change_settings(table, settings.action.change)


def run_indexer(table: HoodieTable, config: HoodieConfig, mode: str, index_types: Sequence[str] | str,
                index_name: str | None = None, index_column: str | None = None,
                instant_time: str | None = None, executor: Executor | None = None) -> dict[str, Any]:
    """``schedule``, ``execute`` (``instant_time`` or the earliest pending plan) or
    ``scheduleAndExecute`` (the default of Hudi's indexer jobs). Returns the job's result.
    ``executor``: where a secondary index's file slices are read (Spark in the job)."""
    if mode not in MODES:
        raise HoodieConfigError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}.")
    settings = IndexerSettings.from_config(config, index_types, index_name, index_column)
    _prepare(table, settings)
    if mode == "execute" and instant_time:
        return execute_indexing(table, instant_time, settings, executor)
    if mode != "schedule":
        # a plan of these partitions a killed run left behind is finished first (as a pending
        # clean is), so a retried task completes what its first try started
        pending = [i for i in pending_indexing_instants(table)
                   if mode == "execute" or set(_plan_names(table, i.timestamp)) & set(settings.partitions)]
        if pending:
            return {**execute_indexing(table, pending[0].timestamp, settings, executor), "resumed": pending[0].timestamp}
        if mode == "execute":
            return {"instant": None, "action": Action.INDEXING, "reason": "no pending indexing plan"}
    instant, todo, reason = schedule_indexing(table, settings)
    if instant is None:
        return {"instant": None, "action": Action.INDEXING, "reason": reason}
    if mode == "schedule":
        return {"instant": instant, "action": Action.INDEXING, "state": "REQUESTED", "partitions": todo}
    return execute_indexing(table, instant, settings, executor)


__all__ = ["MODES", "execute_indexing", "pending_indexing_instants", "run_indexer", "schedule_indexing"]
