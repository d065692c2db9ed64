"""Reading the statistics partitions (``column_stats``, ``partition_stats``, ``bloom_filters``).

Each partition is a set of file groups ``<prefix>-<nnnn>-0`` of the metadata table; a key
lives in file group ``file_group_index(key, count)`` (Hudi's mapRecordKeyToFileGroupIndex
over the whole key). A lookup reads each file group it needs once, for all of its keys: the
base HFile through its key index, then the log blocks of valid instants in order. A later
record of a key replaces the earlier one, except that two live column-stats records of one
key merge as Hudi's HoodieMetadataPayload does (extremes of the values, sums of the counts);
a tombstone (``isDeleted``) wins, and :func:`read_index_records` leaves tombstoned keys out.
:func:`slice_records` (every record of a file group, in order) also reads the secondary
indexes (:mod:`secondary_index`), whose file groups are laid out the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.log.delete_block import decode_delete_block
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.metadata_table.damage import load_metadata_config, refuse_damage
from airflow_hoodie.table.metadata_table.column_stats import comparable_value, unwrap_value
from airflow_hoodie.table.metadata_table.files_listing import _decode_values, block_instants, metadata_table_path
from airflow_hoodie.table.metadata_table.hfile_lookup import get_prefixed_records, get_records
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.record_index import file_group_index
from airflow_hoodie.table.timeline.timeline import Timeline

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.storage.storage import Storage


@dataclass
class IndexPartitionFiles:
    """One statistics partition's file groups (ordered by index) and which blocks count."""

    storage: Storage
    partition: str
    slices: list[FileSlice]
    valid: set[str]
    pending: set[str]
    timeline_start: str | None
    #: storage reads made by lookups (HFiles and log files opened)
    reads: int = 0

    @property
    def count(self) -> int:
        return len(self.slices)


def index_partition_files(table: HoodieTable, partition: str) -> IndexPartitionFiles:
    from airflow_hoodie.table.file_group.file_system_view import FileSystemView  # noqa: PLC0415

    storage, mdt_base = table.storage, metadata_table_path(table.base_path)
    mdt_timeline = Timeline.load(storage, mdt_base)
    view = FileSystemView(storage, mdt_base, mdt_timeline, load_metadata_config(storage, mdt_base))
    slices = sorted(view.latest_merged_file_slices(partition), key=lambda s: s.file_id)
    ids = [s.file_id for s in slices]
    if not slices or any(not fid.endswith(f"{i:04d}-0") for i, fid in enumerate(ids)):
        raise HoodieNotSupportedError(
            f"The {partition} partition of {table.base_uri}'s metadata table has the file groups {ids}, not Hudi's "
            "<prefix>-0000-0 .. <prefix>-<n-1>-0; it cannot be read or kept true. Run with hoodie.metadata.enable=false "
            "to drop the metadata table (Hudi rebuilds it).")
    data_timeline = table.reload_timeline()
    valid, pending = block_instants(data_timeline, mdt_timeline)
    return IndexPartitionFiles(storage, partition, slices, valid, pending, data_timeline.first_non_savepoint_commit())


def _combine(old: Mapping[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """HoodieMetadataPayload's merge of two records of one key."""
    if old is None or int(new.get("type") or 0) not in (3, 6):
        return new
    a, b = old.get("ColumnStatsMetadata"), new.get("ColumnStatsMetadata")
    if not a or not b or b.get("isDeleted") or a.get("isDeleted"):
        return new
    merged = dict(b)
    vt = b.get("valueType") or a.get("valueType")
    if vt and int(vt.get("typeOrdinal") or 0) == 1 and a.get("valueType"):  # NULL: a block without data
        vt = merged["valueType"] = a["valueType"]
    order = lambda w: comparable_value(w, vt)  # noqa: E731
    mins = [w for w in (a.get("minValue"), b.get("minValue")) if unwrap_value(w) is not None]
    maxs = [w for w in (a.get("maxValue"), b.get("maxValue")) if unwrap_value(w) is not None]
    merged["minValue"] = min(mins, key=order) if mins else None
    merged["maxValue"] = max(maxs, key=order) if maxs else None
    for k in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        merged[k] = int(a.get(k) or 0) + int(b.get(k) or 0)
    return {**new, "ColumnStatsMetadata": merged}


def slice_records(files: IndexPartitionFiles, fs: FileSlice, rows: list[bytes] | None = None,
                  prefixes: list[bytes] | None = None) -> Iterator[tuple[str, dict[str, Any] | None, str]]:
    """Every record of one file group as written, in the order that decides the live one: the
    base HFile, then the log blocks of valid instants. Each comes as (key, record, where); a
    key of a delete block as (key, None, where). ``rows``: sorted keys to read through each
    HFile's key index (other keys may still come); ``prefixes``: only keys starting with one
    of them (read through the key index, undecoded otherwise); None reads everything."""
    storage = files.storage

    def take(hfile: HFile, schema: str | None) -> Iterator[tuple[str, dict[str, Any] | None, str]]:
        if prefixes is not None:
            pairs = get_prefixed_records(hfile, prefixes)
        else:
            pairs = hfile.records() if rows is None else get_records(hfile, rows)
        for key, record in _decode_values(pairs, schema, hfile.where, named_unions=True):
            yield key, record, hfile.where

    if fs.base_file is not None:
        files.reads += 1
        hfile = HFile(storage.read_bytes(fs.base_file.path), storage.uri(fs.base_file.path))
        yield from take(hfile, hfile.schema_json)
    logs = [lf.path for lf in fs.log_files]
    if not logs:
        return
    files.reads += len(logs)
    scan = scan_log_files(storage, logs, None, files.valid, inflight_instants=files.pending,
                          timeline_start=files.timeline_start, decode=False, warn=False)
    refuse_damage(scan, files.partition, storage)  # a skipped block would drop entries: wrong answers
    for block in scan.blocks:
        where = f"{storage.uri(block.log_path)} block at byte {block.block.offset}"
        if block.block_type == BlockType.DELETE:
            for rec in decode_delete_block(block.block):
                if prefixes is None or any((rec.record_key or "").encode("utf-8").startswith(p) for p in prefixes):
                    yield rec.record_key, None, where
        elif block.block_type == BlockType.HFILE_DATA:
            yield from take(HFile(block.block.content or b"", where), block.block.schema)
        else:
            raise HoodieNotSupportedError(f"{where}: a {block.block.type_name} block in the metadata table's "
                                          f"{files.partition} partition; Hudi writes HFile data and delete blocks.")


def merge_group(files: IndexPartitionFiles, fs: FileSlice, wanted: set[str] | None) -> dict[str, dict[str, Any]]:
    """key -> merged record of one file group (tombstones included)."""
    out: dict[str, dict[str, Any]] = {}
    rows = None if wanted is None else sorted(k.encode("utf-8") for k in wanted)
    for key, record, _ in slice_records(files, fs, rows):
        if record is None:
            out.pop(key, None)
        elif wanted is None or key in wanted:
            out[key] = _combine(out.get(key), record)
    return out


def read_index_records(files: IndexPartitionFiles, keys: Iterable[str] | None = None,
                       prefixes: bool = False) -> dict[str, dict[str, Any]]:
    """key -> live record of ``keys`` (every key when None), one read per file group needed.
    ``prefixes``: ``keys`` are key prefixes, matched in every file group (a whole scan)."""
    if keys is None or prefixes:
        groups: dict[int, set[str] | None] = {i: None for i in range(files.count)}
    else:
        groups = {}
        for key in keys:
            groups.setdefault(file_group_index(key, files.count), set()).add(key)  # type: ignore[union-attr]
    wanted_prefixes = tuple(keys) if prefixes and keys is not None else None
    out: dict[str, dict[str, Any]] = {}
    for index, wanted in sorted(groups.items()):
        for key, record in merge_group(files, files.slices[index], wanted).items():
            if wanted_prefixes is not None and not key.startswith(wanted_prefixes):
                continue
            payload = record.get("ColumnStatsMetadata") or record.get("BloomFilterMetadata") or {}
            if not payload.get("isDeleted"):
                out[key] = record
    return out
