"""The one commit path of every action, and the steps around it that keep the metadata table.

Every action (write, compaction, clustering, clean, rollback, restore, savepoint, and the
metadata table's own delta commits and services) completes its instant through
:func:`complete`: the caller's pre-commit step (conflict check, lost-lock check, marker
reconciliation), then the metadata-table delta commit of the instant, then the completed
instant file, serialized for the table's version (6: JSON; 8 and 9: Avro, with a completion
time). Before a change, :func:`prepare_for_change` checks the table may be changed and
makes its metadata table one the change keeps true (or drops it, with
``hoodie.metadata.enable=false``); a write builds a missing one under the table lock with
:func:`ensure_metadata_table`. The format layer (``airflow_hoodie.table``) only reads and
serializes; keeping the metadata table is a service of these actions.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from airflow_hoodie.settings.change import ChangeSettings
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.errors import HoodieConcurrentWriterError
from airflow_hoodie.table.metadata_table.files_change import files_change
from airflow_hoodie.table.metadata_table.files_listing import files_partition_ready
from airflow_hoodie.table.metadata_table.partitions import has_metadata_table
from airflow_hoodie.table.metadata_table.record_index import has_record_index
from airflow_hoodie.table.timeline.temp_files import remove_stale_temp_files

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.table_format import CompletedMetadata
    from airflow_hoodie.table.timeline.instant import Instant


def _writers() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """The metadata-table writer modules. Imported when a change runs: they complete the
    metadata table's own instants through :func:`complete`, so they import this module."""
    from airflow_hoodie.actions.metadata_table import (  # noqa: PLC0415
        maintenance,
        metadata_writer,
        record_index_writer,
        secondary_index_writer,
    )

    return maintenance, metadata_writer, record_index_writer, secondary_index_writer


def use_change_settings(table: HoodieTable, change: ChangeSettings) -> None:
    """The settings of the change ``table`` is about to go through: its instant times wait
    out their expected clock skew from the first one on. The only place (with
    :func:`prepare_for_change`) that sets them on a table."""
    table.clock_skew_ms = change.clock_skew_ms
    table.metadata_settings = change.metadata


def metadata_settings(table: HoodieTable) -> MetadataTableSettings | None:
    """The metadata-table settings of the change in progress on ``table`` (prepared by
    :func:`prepare_for_change`); None when it does not keep the metadata table."""
    return table.metadata_settings if table.metadata_enabled else None


def prepare_for_change(table: HoodieTable, change: ChangeSettings | None = None, restoring: bool = False) -> None:
    """Before a write or table service changes anything: the version must be one we
    write, no restore may be half done (``restoring``: the change is the restore that
    finishes it), and the metadata table must be one the change keeps true (with
    ``hoodie.metadata.enable=false`` it goes, so no reader is left with a stale listing;
    see :mod:`actions.metadata_table.maintenance`)."""
    table.check_writable()
    if not restoring:
        table.check_no_pending_restore()
    table.check_latest_commit()
    change = change or ChangeSettings.default()
    use_change_settings(table, change)
    settings = change.metadata
    table.metadata_enabled = settings is not None
    maintenance, _, _, _ = _writers()
    maintenance.prepare_metadata_table(table, settings)
    remove_stale_temp_files(table.storage, table.meta_path)


def ensure_metadata_table(table: HoodieTable) -> None:
    """A write (under the table lock, before its instant exists) builds the metadata table
    when it is enabled and missing, with the record index and statistics partitions its
    settings ask for; see :mod:`actions.metadata_table.maintenance`."""
    settings = metadata_settings(table)
    if settings is not None:
        maintenance, _, record_index_writer, _ = _writers()
        maintenance.ensure_files_partition(table, settings)
        record_index_writer.ensure_record_index(table, settings)


def complete(table: HoodieTable, instant: Instant, metadata: CompletedMetadata,
             pre_commit: Callable[[], None] | None = None, changes_listing: bool = True) -> Instant:
    """Complete ``instant`` (inflight) of ``table`` with ``metadata``: the one commit path of
    every action (write, compaction, clustering, clean, rollback, restore, savepoint, and the
    metadata table's own instants).

    Runs the caller's ``pre_commit`` step (conflict check, lost-lock check, marker
    reconciliation), then the table's own: the metadata-table delta commit of this
    instant (or, without one, a check that no writer built a metadata table meanwhile:
    completing would leave its listing without our change), then serializes ``metadata``
    for the table's version and writes the completed instant file. Callers that run
    concurrently hold the lock. ``changes_listing=False``: the instant adds or removes no file a
    listing holds (a savepoint, the rollback of a write that never completed)."""
    if pre_commit is not None:
        pre_commit()
    body = table.format.serialize_completed(instant.action, metadata)
    settings = metadata_settings(table) if changes_listing else None
    if settings is not None and files_partition_ready(table.reload_config()):
        maintenance, metadata_writer, record_index_writer, secondary_index_writer = _writers()
        blocked = maintenance.unmaintained_partitions(table)
        if blocked:
            raise HoodieConcurrentWriterError(
                f"Another writer added the metadata-table partition(s) {', '.join(blocked)} to {table.base_uri} "
                f"while this task ran ({instant.action} {instant.timestamp}); airflow-hoodie cannot keep them true, "
                "so nothing of this task is visible. Retry the task; it stops before changing anything and says "
                "what to do.")
        index_change = record_index_writer.record_index_change(table, instant, metadata) \
            if has_record_index(table.config) else None
        secondary_change = secondary_index_writer.secondary_index_change(table, instant, metadata)
        metadata_writer.update_files_partition(table, instant.timestamp, files_change(instant.action, metadata),
                                               settings, index_change, secondary_change)
    elif changes_listing and has_metadata_table(table, reload=True):
        raise HoodieConcurrentWriterError(
            f"Another writer created (or is building) a metadata table under {table.base_uri}/.hoodie/metadata "
            f"while this task ran without one ({instant.action} {instant.timestamp}); completing would leave its "
            "file listing stale. Nothing of this task is visible. Retry the task: it then keeps the metadata "
            "table true, or drops it first with hoodie.metadata.enable=false, as a Hudi writer does.")
    return table.timeline_writer().complete(instant, body, table.completion_time(instant))
