"""The ``record_index`` partition of Hudi's metadata table: record key -> file group, for
the whole table (Hudi's record-level index, on table versions 6, 8 and 9): its layout, the
encoding of its records and the lookups.

Layout (HoodieTableMetadataUtil, HoodieMetadataPayload): N file groups
``record-index-000i-0`` under ``.hoodie/metadata/record_index``; a key lives in group
``abs(abs(String.hashCode(key)) % N)``. A record is a ``HoodieMetadataRecord`` of type 5
whose ``recordIndexMetadata`` holds the data partition, the file id (a ``<uuid>-<n>`` id
split into the UUID's high and low 64 bits and the index ``n``: encoding 0; any other id
verbatim: encoding 1) and the epoch millis of the instant that wrote the record; Hudi 1.x's
record schema has further (null) fields after it. N is fixed when the partition is built,
since every later write must hash the keys the same way.

A lookup reads only the file groups its keys hash to: the base HFile through its key index,
then the log blocks of valid instants in order (a later record replaces, a delete block
removes). What a data instant changes in the index, and writing and building it, live in
``actions.metadata_table.record_index_writer``.
"""

from __future__ import annotations

import datetime as _dt
import io
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import fastavro
import pyarrow as pa

from airflow_hoodie.errors import (
    HoodieCorruptedDataError,
    HoodieError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.java_hash import file_group_indexes, java_string_hash
from airflow_hoodie.table.log.delete_block import decode_delete_block
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.metadata_table.damage import (
    load_metadata_config,
    refuse_damage,
)
from airflow_hoodie.table.metadata_table.files_listing import (
    _decode_values,
    block_instants,
    metadata_table_path,
)
from airflow_hoodie.table.metadata_table.hfile_lookup import get_records
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.metadata_record import (
    encode_record,
    metadata_record_schema,
)
from airflow_hoodie.table.metadata_table.partitions import listed_in
from airflow_hoodie.table.metadata_table.stats_partitions import index_definitions
from airflow_hoodie.table.timeline.instant import parse_instant_time
from airflow_hoodie.table.timeline.timeline import Timeline

if TYPE_CHECKING:  # the table imports its readers
    from airflow_hoodie.table.hoodie_table import HoodieTable

RECORD_INDEX_PARTITION = "record_index"
FILE_ID_PREFIX = "record-index-"
TYPE_RECORD_INDEX = 5
#: HoodieRecordIndex.IS_PARTITIONED_OPTION: the index definition's option naming Hudi 1.1's
#: partitioned record index (keys unique per data partition, not table-wide)
IS_PARTITIONED_OPTION = "isPartitioned"
#: HoodieMetadataPayload.RECORD_INDEX_MISSING_FILEINDEX_FALLBACK: a bare-UUID file id
MISSING_FILE_INDEX = -1
_UUID_LEN = 36
_MASK64 = (1 << 64) - 1

#: a key's location: (data partition path, file id)
Location = tuple[str, str]


# ------------------------------------------------------------------------ hashing and records
def file_group_index(record_key: str, file_group_count: int) -> int:
    """mapRecordKeyToFileGroupIndex of one key (:func:`~java_hash.file_group_indexes`)."""
    h = java_string_hash(record_key)
    return abs(h) % file_group_count


def file_group_id(index: int) -> str:
    return f"{FILE_ID_PREFIX}{index:04d}-0"


def instant_millis(instant_time: str, utc: bool) -> int:
    """Epoch millis of an instant time, in the table's timeline zone (Hudi: local unless UTC)."""
    when = parse_instant_time(instant_time[:17])
    if utc:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return int(when.timestamp() * 1000)


def index_info(partition: str, file_id: str, millis: int) -> dict[str, Any]:
    """HoodieRecordIndexInfo of a location (createRecordIndexUpdate)."""
    try:
        if len(file_id) == _UUID_LEN:
            uid, index = uuid.UUID(file_id), MISSING_FILE_INDEX
        else:
            head, _, tail = file_id.rpartition("-")
            uid, index = uuid.UUID(head), int(tail)
        if str(uid) != file_id[:_UUID_LEN]:
            raise ValueError(file_id)
    except ValueError:
        return {"partitionName": partition, "fileIdHighBits": None, "fileIdLowBits": None,
                "fileIndex": None, "fileId": file_id, "instantTime": millis, "fileIdEncoding": 1}
    high, low = uid.int >> 64, uid.int & _MASK64
    return {"partitionName": partition, "fileIdHighBits": high - (1 << 64) if high >> 63 else high,
            "fileIdLowBits": low - (1 << 64) if low >> 63 else low, "fileIndex": index, "fileId": "",
            "instantTime": millis, "fileIdEncoding": 0}


def location_of(info: Mapping[str, Any]) -> Location:
    """The (partition, file id) a HoodieRecordIndexInfo names (HoodieMetadataPayload.getRecordGlobalLocation)."""
    if int(info.get("fileIdEncoding") or 0) == 1:
        return info.get("partitionName") or "", info.get("fileId") or ""
    uid = uuid.UUID(int=((int(info["fileIdHighBits"]) & _MASK64) << 64) | (int(info["fileIdLowBits"]) & _MASK64))
    index = info.get("fileIndex")
    file_id = str(uid) if index is None or int(index) == MISSING_FILE_INDEX else f"{uid}-{int(index)}"
    return info.get("partitionName") or "", file_id


@lru_cache(maxsize=8)
def _record_frame(file_name: str | None, table_version: int) -> tuple[bytes, bytes]:
    """The Avro bytes of a type-5 record around its ``recordIndexMetadata`` value: before it
    (meta fields, empty key, type 5, null payloads, then that union's branch 1) and after it
    (the null fields Hudi 1.x's schema has behind it)."""
    rec: dict[str, Any] = {"key": "", "type": TYPE_RECORD_INDEX, "recordIndexMetadata": None}
    if file_name is not None:
        rec["_hoodie_file_name"] = file_name
    fields = [f["name"] for f in metadata_record_schema(table_version)["fields"]]
    trailing = len(fields) - 1 - fields.index("recordIndexMetadata")
    null_value = encode_record(rec, table_version)
    # every field behind it is a null union branch: one zero byte each
    if null_value[len(null_value) - trailing - 1:] != b"\x00" * (trailing + 1):
        raise HoodieError("The bundled HoodieMetadataRecord schema has non-null fields after recordIndexMetadata "
                          "(a packaging bug).")
    return null_value[:len(null_value) - trailing - 1] + b"\x02", b"\x00" * trailing


@lru_cache(maxsize=4)
def _info_schema(table_version: int) -> Any:
    field_ = next(f for f in metadata_record_schema(table_version)["fields"] if f["name"] == "recordIndexMetadata")
    return fastavro.parse_schema(next(t for t in field_["type"] if t != "null"))


@lru_cache(maxsize=4096)
def _file_info(partition: str, file_id: str) -> dict[str, Any]:
    return index_info(partition, file_id, 0)


def record_index_records(locations: Mapping[str, tuple[str, str, int]], file_name: str | None = None,
                         table_version: int = 6) -> list[tuple[bytes, bytes]]:
    """(HFile key, Avro value) of type-5 records for ``key -> (partition, file id, millis)``,
    sorted by key (HFiles are sorted). The bytes are those of the whole HoodieMetadataRecord;
    only its last field is encoded, once per distinct location (a 200k-key insert spent 4 s
    encoding the rest, and a write's keys share a few file groups and one instant)."""
    (prefix, suffix), schema = _record_frame(file_name, table_version), _info_schema(table_version)
    values: dict[tuple[str, str, int], bytes] = {}
    buf = io.BytesIO()
    out = []
    for key in sorted(locations):
        location = locations[key]
        value = values.get(location)
        if value is None:
            part, fid, millis = location
            buf.seek(0)
            buf.truncate()
            fastavro.schemaless_writer(buf, schema, {**_file_info(part, fid), "instantTime": millis})
            value = values[location] = prefix + buf.getvalue() + suffix
        out.append((key.encode("utf-8"), value))
    return out


# ------------------------------------------------------------------------ reading
def has_record_index(table_config: Any) -> bool:
    return RECORD_INDEX_PARTITION in listed_in(table_config)


def is_partitioned_record_index(table: HoodieTable) -> bool:
    """Whether the table's index definitions make its record index Hudi 1.1's partitioned
    one (``indexOptions.isPartitioned=true`` for ``record_index`` in ``index.json``): its
    keys are unique per data partition and its file groups are laid out per partition, so
    this module's global layout and lookups do not apply to it."""
    options = (index_definitions(table).get(RECORD_INDEX_PARTITION) or {}).get("indexOptions") or {}
    return str(options.get(IS_PARTITIONED_OPTION, "false")).strip().lower() == "true"


@dataclass
class _IndexFiles:
    """The record index's file groups (ordered by index) and which blocks of them count."""

    storage: Any
    mdt_base: str
    slices: list[FileSlice]
    valid: set[str]
    pending: set[str]
    timeline_start: str | None

    @property
    def count(self) -> int:
        return len(self.slices)


def _index_files(table: HoodieTable, data_timeline: Timeline | None = None) -> _IndexFiles:
    from airflow_hoodie.table.file_group.file_system_view import FileSystemView  # noqa: PLC0415

    storage, mdt_base = table.storage, metadata_table_path(table.base_path)
    mdt_timeline = Timeline.load(storage, mdt_base)
    view = FileSystemView(storage, mdt_base, mdt_timeline, load_metadata_config(storage, mdt_base))
    slices = sorted(view.latest_merged_file_slices(RECORD_INDEX_PARTITION), key=lambda s: s.file_id)
    expected = [file_group_id(i) for i in range(len(slices))]
    if not slices or [s.file_id for s in slices] != expected:
        raise HoodieNotSupportedError(
            f"The record index of {table.base_uri} has the file groups {[s.file_id for s in slices]}, not Hudi's "
            "record-index-0000-0 .. record-index-<n-1>-0; it cannot be read or kept true. Run with "
            "hoodie.metadata.enable=false to drop the metadata table (Hudi rebuilds it).")
    data_timeline = data_timeline or table.reload_timeline()
    valid, pending = block_instants(data_timeline, mdt_timeline)
    return _IndexFiles(storage, mdt_base, slices, valid, pending, data_timeline.first_non_savepoint_commit())


def _merge_group(files: _IndexFiles, fs: FileSlice, wanted: set[str] | None,
                 skip_instants: frozenset[str] = frozenset()) -> dict[str, dict[str, Any]]:
    """key -> HoodieRecordIndexInfo of one file group: base HFile, then valid log blocks in
    order (a later record replaces, a delete removes). Blocks of ``skip_instants`` are left out."""
    storage = files.storage
    out: dict[str, dict[str, Any]] = {}

    def take(pairs: Iterable[tuple[bytes, bytes]], schema: str | None, where: str) -> None:
        # Values repeat: a key's value is its location and instant (the record's key field
        # is empty, as Hudi writes it), so each distinct value is decoded once and its
        # HoodieRecordIndexInfo is shared, read-only, by every key that has it.
        cells = [(key, value) for key, value in ((row.decode("utf-8"), value) for row, value in pairs)
                 if wanted is None or key in wanted]
        first_key: dict[bytes, str] = {}
        for key, value in cells:
            first_key.setdefault(value, key)
        infos: dict[bytes, dict[str, Any]] = {}
        decoded = _decode_values(((key.encode("utf-8"), value) for value, key in first_key.items()), schema, where)
        for (key, record), value in zip(decoded, first_key):
            info = record.get("recordIndexMetadata")
            if int(record.get("type") or 0) != TYPE_RECORD_INDEX or info is None:
                raise HoodieCorruptedDataError(f"{where}: record {key!r} of the record index is not a type-5 record.")
            infos[value] = info
        for key, value in cells:
            out[key] = infos[value]

    wanted_rows = None if wanted is None else [k.encode("utf-8") for k in wanted]

    def pairs(hfile: HFile) -> Any:  # through the HFile's key index when only some keys are wanted
        return hfile.records() if wanted_rows is None else get_records(hfile, wanted_rows)

    if fs.base_file is not None:
        hfile = HFile(storage.read_bytes(fs.base_file.path), storage.uri(fs.base_file.path))
        take(pairs(hfile), hfile.schema_json, hfile.where)
    logs = [lf.path for lf in fs.log_files]
    if logs:
        scan = scan_log_files(storage, logs, None, files.valid - skip_instants, inflight_instants=files.pending,
                              timeline_start=files.timeline_start, decode=False, warn=False)
        refuse_damage(scan, RECORD_INDEX_PARTITION, storage)  # a skipped block would read as "key absent"
        for block in scan.blocks:
            if block.instant_time in skip_instants:
                continue
            where = f"{storage.uri(block.log_path)} block at byte {block.block.offset}"
            if block.block_type == BlockType.DELETE:
                for rec in decode_delete_block(block.block):
                    out.pop(rec.record_key, None)
            elif block.block_type == BlockType.HFILE_DATA:
                inner = HFile(block.block.content or b"", where)
                take(pairs(inner), block.block.schema or inner.schema_json, where)
            else:
                raise HoodieNotSupportedError(f"{where}: a {block.block.type_name} block in the record index; Hudi "
                                              "writes HFile data and delete blocks there.")
    return out


def record_index_file_group_count(table: HoodieTable) -> int:
    """How many file groups the keys hash over (fixed when the index was built)."""
    return _index_files(table).count


def read_record_index(table: HoodieTable, keys: Iterable[str] | None = None,
                      skip_instants: frozenset[str] = frozenset()) -> dict[str, Location]:
    """key -> (partition, file id) of ``keys`` (every key when None). Only the file groups
    the keys hash to are read, each once for all of its keys, and in each HFile only the
    data blocks its key index names for them (:mod:`hfile_lookup`)."""
    files = _index_files(table)
    if keys is None:
        groups: dict[int, set[str] | None] = {i: None for i in range(files.count)}
    else:
        groups = {}
        key_list = [key for key in keys if key is not None]
        for key, index in zip(key_list, file_group_indexes(pa.array(key_list, pa.string()), files.count).tolist()):
            groups.setdefault(index, set()).add(key)  # type: ignore[union-attr]
    out: dict[str, Location] = {}
    for index, wanted in sorted(groups.items()):
        locations: dict[int, Location] = {}  # per shared HoodieRecordIndexInfo (_merge_group)
        for key, info in _merge_group(files, files.slices[index], wanted, skip_instants).items():
            location = locations.get(id(info))
            if location is None:
                location = locations[id(info)] = location_of(info)
            out[key] = location
    return out
