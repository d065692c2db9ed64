"""The ``files`` partition of Hudi's metadata table: the table's file listing without
listing storage.

Hudi 0.11+ keeps, in ``.hoodie/metadata`` (itself a MERGE_ON_READ Hudi table), one
``HoodieMetadataRecord`` per data partition (type 2: file name -> size / deleted) and
one ``__all_partitions__`` record (type 1: the partitions). Its base files are HFiles and
its log files hold HFile data blocks; a record's state is the base record merged with
every later log record the way Hudi's HoodieMetadataPayload combines them: a tombstone
removes the file, otherwise the larger size wins. On an object store this replaces one
listing call per partition with a read of a few files.

Only log blocks whose instant completed on the metadata table *and* on the data table
count (Hudi's ``getValidInstantTimestamps``): the metadata table is written before the
data instant completes, so a failed data write leaves blocks that must be ignored.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import fastavro

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieMetadataDamagedError, HoodieNotSupportedError
from airflow_hoodie.table.file_group.partition_metadata import is_partition_metafile
from airflow_hoodie.table.log.delete_block import decode_delete_block
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata_table.damage import damage_message, load_metadata_config, refuse_damage
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.metadata_record import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_NAME,
    TYPE_FILE_LIST,
    TYPE_PARTITION_LIST,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_FOLDER,
    METADATA_PARTITIONS,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline import Timeline

log = logging.getLogger(__name__)

FILES_PARTITION = "files"
#: the metadata table's own initial commits carry this prefix (SOLO_COMMIT_TIMESTAMP)
INIT_INSTANT_PREFIX = "00000000000000"


def files_partition_ready(table_config: Any) -> bool:
    """The table says its metadata table lists files (the partition is built, not in flight)."""
    listed = [p.strip() for p in (table_config.get(METADATA_PARTITIONS) or "").split(",")]
    return FILES_PARTITION in listed


def metadata_table_path(base_path: str) -> str:
    return Storage.join(base_path, ".hoodie", METADATA_FOLDER)


@dataclass
class FilesListing:
    """Partitions (``""`` for a non-partitioned table) and their live files with sizes."""

    files: dict[str, dict[str, int]] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    #: metadata-table files read to build it (for the storage-call count of the benchmark)
    files_read: int = 0


def _partition_name(name: str) -> str:
    return "" if name == NON_PARTITIONED_NAME else name


def _combine(previous: dict[str, dict[str, Any]] | None, new: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """HoodieMetadataPayload.combineFileSystemMetadata: a tombstone removes a listed file
    (and stays only when there was nothing to remove); sizes only grow, so the max wins."""
    out = dict(previous or {})
    for name, info in (new or {}).items():
        old = out.get(name)
        if old is None:
            out[name] = info
        elif info.get("isDeleted"):
            if old.get("isDeleted"):
                out[name] = info
            else:
                del out[name]
        else:
            out[name] = {"size": max(int(info.get("size") or 0), int(old.get("size") or 0)), "isDeleted": False}
    return out


class _Merger:
    """Records by key, merged in the order they are fed (base, then log blocks in order)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.types: dict[str, int] = {}

    def add(self, key: str, record: dict[str, Any], where: str) -> None:
        rtype = int(record.get("type") or 0)
        if rtype not in (TYPE_PARTITION_LIST, TYPE_FILE_LIST):
            raise HoodieNotSupportedError(f"{where}: a files-partition record of type {rtype} ({key!r}); only "
                                          "partition and file lists are known.")
        self.types[key] = rtype
        self.records[key] = _combine(self.records.get(key), record.get("filesystemMetadata") or {})

    def delete(self, key: str) -> None:
        self.records.pop(key, None)


def _decode_values(pairs: Any, schema_json: str | None, where: str, named_unions: bool = False) -> Any:
    """(key, record) of metadata records. ``named_unions``: a union of several record types
    (column stats' min/max wrappers) decodes as (record name, record), so a record written
    again keeps its wrapper: decoded bare, a DoubleWrapper 0.1 re-encodes as the union's
    first record that fits, a FloatWrapper, and a date or long as an IntWrapper."""
    if not schema_json:
        raise HoodieCorruptedDataError(f"{where}: no Avro schema for the metadata records.")
    schema = fastavro.parse_schema(json.loads(schema_json))
    for key, value in pairs:
        try:
            record = fastavro.schemaless_reader(io.BytesIO(value), schema, return_record_name=named_unions,
                                               return_record_name_override=named_unions)
        except Exception as exc:  # noqa: BLE001 - fastavro raises several types on bad bytes
            raise HoodieCorruptedDataError(f"{where}: metadata record {key!r} does not decode ({exc}).") from exc
        yield key.decode("utf-8"), record


def valid_data_instants(data_timeline: Timeline, metadata_timeline: Timeline) -> set[str]:
    """Instants whose metadata-table blocks count (Hudi's getValidInstantTimestamps)."""
    valid = {i.timestamp for i in data_timeline.instants if i.is_completed}
    for inst in data_timeline.instants:  # a rollback's own update cancels the blocks it rolled back
        if inst.is_completed and inst.action in (Action.ROLLBACK, Action.RESTORE):
            try:
                meta = avro_codec.deserialize(data_timeline.read_details(inst))
            except Exception:  # noqa: BLE001 - unreadable rollback metadata: its blocks just stay out
                continue
            valid.update(meta.get("commitsRollback") or [])
            for rollbacks in (meta.get("hoodieRestoreMetadata") or {}).values():
                for rb in rollbacks or []:
                    valid.update(rb.get("commitsRollback") or [])
    for inst in metadata_timeline.instants:
        if inst.is_completed and (inst.timestamp.startswith(INIT_INSTANT_PREFIX)
                                  or inst.action in (Action.ROLLBACK, Action.RESTORE, Action.LOG_COMPACTION)):
            valid.add(inst.timestamp)
    return valid


def block_instants(data_timeline: Timeline, metadata_timeline: Timeline) -> tuple[set[str], set[str]]:
    """(instants whose log blocks count, instants still pending on the metadata table).

    A delta commit the metadata table archived still counts, as in Hudi's log scanner
    (containsOrBeforeTimelineStarts): Hudi's writer archives the metadata table's timeline
    up to the data table's earliest instant, which can leave blocks of archived delta
    commits in the latest file slice while a pending data instant holds compaction back."""
    committed = {i.timestamp for i in metadata_timeline.instants if i.is_completed}
    first = metadata_timeline.completed_commits().first()
    valid = {ts for ts in valid_data_instants(data_timeline, metadata_timeline)
             if ts in committed or (first is not None and ts < first.timestamp)}
    return valid, {i.timestamp for i in metadata_timeline.instants if not i.is_completed}


@dataclass
class SliceMerge:
    """What merging one file slice read (compaction reports it in its write stat)."""

    files_read: int = 0
    base_keys: set[str] = field(default_factory=set)
    log_records: int = 0
    log_blocks: int = 0


def merge_file_slice(storage: Storage, fs: Any, valid: set[str], pending: set[str], merger: _Merger) -> SliceMerge:
    """Feed ``fs`` into ``merger``: its base HFile, then the blocks of ``valid`` instants in
    log order (what a reader and the metadata table's compaction both see)."""
    out = SliceMerge()
    if fs.base_file is not None:
        out.files_read += 1
        hfile = HFile(storage.read_bytes(fs.base_file.path), storage.uri(fs.base_file.path))
        for key, record in _decode_values(hfile.records(), hfile.schema_json, hfile.where):
            merger.add(key, record, hfile.where)
            out.base_keys.add(key)
    logs = [lf.path for lf in fs.log_files]
    out.files_read += len(logs)
    scan = scan_log_files(storage, logs, None, valid, inflight_instants=pending, decode=False, warn=False)
    refuse_damage(scan, FILES_PARTITION, storage)  # a skipped block would drop files from the listing
    for block in scan.blocks:
        where = f"{storage.uri(block.log_path)} block at byte {block.block.offset}"
        out.log_blocks += 1
        if block.block_type == BlockType.DELETE:
            for rec in decode_delete_block(block.block):
                if rec.record_key:
                    merger.delete(rec.record_key)
                    out.log_records += 1
        elif block.block_type == BlockType.HFILE_DATA:
            inner = HFile(block.block.content or b"", where)
            for key, record in _decode_values(inner.records(), block.block.schema or inner.schema_json, where):
                merger.add(key, record, where)
                out.log_records += 1
        else:
            raise HoodieNotSupportedError(f"{where}: a {block.block.type_name} block in the metadata table's "
                                          "files partition; Hudi writes HFile data and delete blocks there.")
    return out


def load_files_listing(storage: Storage, base_path: str, data_timeline: Timeline, *,
                       fallback: bool = True) -> FilesListing:
    """The merged ``files`` partition of the table at ``base_path``.

    A files partition with a corrupt or truncated block (:mod:`damage`) cannot say which
    files exist: Hudi's reader skips the block and its files vanish from the listing. With
    ``fallback`` the listing comes from storage instead (what a reader with the metadata
    table disabled sees; the file system view keeps only committed files either way), with
    a warning naming the damaged log and how to rebuild; without it, the damage is raised.
    A writer still refuses such a metadata table (metadata_writer), since it would keep a
    partition Hudi's own readers misread."""
    try:
        return _load_files_listing(storage, base_path, data_timeline)
    except HoodieMetadataDamagedError as exc:
        if not fallback:
            raise
        log.warning("%s", damage_message(FILES_PARTITION, exc.damaged, "This read lists storage instead.")
                    if exc.damaged else exc)
        return storage_listing(storage, base_path)


def storage_listing(storage: Storage, base_path: str) -> FilesListing:
    """Every file under the table's partitions, from storage (``.hoodie`` left out): the
    listing of a table without a usable files partition."""
    prefix = base_path.rstrip("/") + "/"
    listing = FilesListing()
    partitions: set[str] = set()
    for top in storage.list_dir(base_path):
        if top.is_dir and top.name == ".hoodie":
            continue
        for st in [top] if not top.is_dir else storage.list_dir(top.path, recursive=True):
            if st.is_dir:
                continue
            rel = st.path[len(prefix):] if st.path.startswith(prefix) else st.path
            part, _, name = rel.rpartition("/")
            if is_partition_metafile(name):
                partitions.add(part)
            else:
                listing.files.setdefault(part, {})[name] = st.size
    listing.partitions = sorted(partitions)  # the view adds the folders holding data files
    return listing


def _load_files_listing(storage: Storage, base_path: str, data_timeline: Timeline) -> FilesListing:
    # the metadata table's own view: the data table's view lists through this module
    from airflow_hoodie.table.file_group.file_system_view import FileSystemView  # noqa: PLC0415

    mdt_base = metadata_table_path(base_path)
    mdt_timeline = Timeline.load(storage, mdt_base)
    view = FileSystemView(storage, mdt_base, mdt_timeline, load_metadata_config(storage, mdt_base))
    valid, pending = block_instants(data_timeline, mdt_timeline)
    merger = _Merger()
    listing = FilesListing()
    for fs in view.latest_merged_file_slices(FILES_PARTITION):
        listing.files_read += merge_file_slice(storage, fs, valid, pending, merger).files_read
    return _listing_from(merger, listing)


def _listing_from(merger: _Merger, listing: FilesListing) -> FilesListing:
    parts = merger.records.get(ALL_PARTITIONS_KEY)
    if parts is None:
        raise HoodieCorruptedDataError("The metadata table has no __all_partitions__ record; its files partition "
                                       "is incomplete. Read with hoodie.metadata.enable=false.")
    names = sorted(_partition_name(p) for p, info in parts.items() if not info.get("isDeleted"))
    listing.partitions = names
    for key, files in merger.records.items():
        if key == ALL_PARTITIONS_KEY or merger.types.get(key) != TYPE_FILE_LIST:
            continue
        part = _partition_name(key)
        if part in names:
            listing.files[part] = {n: int(i.get("size") or 0) for n, i in files.items() if not i.get("isDeleted")}
    for part in names:
        listing.files.setdefault(part, {})
    return listing
