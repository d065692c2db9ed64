"""The ``record_index`` partition of Hudi's metadata table: record key -> file group, for
the whole table (Hudi 0.14's record-level index, table version 6).

Layout (HoodieTableMetadataUtil, HoodieMetadataPayload): N file groups
``record-index-000i-0`` under ``.hoodie/metadata/record_index``; a key lives in group
``abs(abs(String.hashCode(key)) % N)``. A record is a ``HoodieMetadataRecord`` of type 5
whose ``recordIndexMetadata`` holds the data partition, the file id (a ``<uuid>-<n>`` id
split into the UUID's high and low 64 bits and the index ``n``: encoding 0; any other id
verbatim: encoding 1) and the epoch millis of the instant that wrote the record. N is fixed
when the partition is built (from the key count; Hudi's min/max file group count), since
every later write must hash the keys the same way.

Hudi's writer updates it from each instant's write statuses: inserted keys are added with
their new file group, deleted keys get a delete record, and updates that stay in their file
group write nothing. We derive the same from the instant's files (engine-agnostic, no
hand-over from the write tasks): a file group's keys before the instant against its keys
after it; a new file group's keys are all additions (inserts and clustering's moved
records); the keys of a replaced group that no new group holds are deletions. A rollback
puts back, for every key the rolled-back instant's blocks touched, the location the index
had without them; when a metadata-table compaction already merged those blocks into base
files, and for a restore (whose inner rollbacks leave no instant, so their blocks stop
counting), it compares the whole index with the table's keys instead (a full scan). The records go to the file groups' logs in the metadata-table delta
commit of the data instant (:func:`metadata_writer.update_files_partition`): an HFile data
block for additions and a delete block for deletions, as Hudi's append handle writes them.
"""

from __future__ import annotations

import datetime as _dt
import io
import math
import secrets
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import fastavro

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieError, HoodieNotSupportedError
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.file_group.file_naming import make_write_token
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.file_group.slice_keys import slice_record_keys
from airflow_hoodie.table.log.delete_block import DeleteRecord, decode_delete_block, delete_block
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, ReplaceCommitMetadata, WriteStat
from airflow_hoodie.table.metadata_table.damage import load_metadata_config, refuse_damage
from airflow_hoodie.table.metadata_table.files_listing import _decode_values, block_instants, metadata_table_path
from airflow_hoodie.table.metadata_table.hfile_lookup import get_records
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import (
    encode_record,
    metadata_record_schema,
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.removal import METADATA_PARTITIONS
from airflow_hoodie.table.timeline.instant import Action, Instant, State, parse_instant_time
from airflow_hoodie.table.metadata_table.files_bootstrap import initialization_instant, write_empty_log
from airflow_hoodie.table.timeline.timeline import Timeline, TimelineWriter

if TYPE_CHECKING:  # the table imports this module
    from airflow_hoodie.table.hoodie_table import HoodieTable

RECORD_INDEX_PARTITION = "record_index"
FILE_ID_PREFIX = "record-index-"
TYPE_RECORD_INDEX = 5
#: HoodieMetadataPayload.RECORD_INDEX_MISSING_FILEINDEX_FALLBACK: a bare-UUID file id
MISSING_FILE_INDEX = -1
#: HoodieTableMetadataUtil's estimate of one record-index entry, for the file group count
AVERAGE_RECORD_SIZE = 48
#: the operation suffix of a partition built on an existing metadata table (v6 writer)
INIT_SUFFIX = 10
_UUID_LEN = 36
_MASK64 = (1 << 64) - 1

#: a key's location: (data partition path, file id)
Location = tuple[str, str]


# ------------------------------------------------------------------------ hashing and records
def file_group_index(record_key: str, file_group_count: int) -> int:
    """mapRecordKeyToFileGroupIndex: Java's String.hashCode over UTF-16 units, then
    ``abs(abs(h) % n)`` (the inner abs of Integer.MIN_VALUE stays negative in Java)."""
    data = record_key.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    if h != -(1 << 31):
        h = abs(h)
    # Java's % truncates toward zero
    rem = int(math.fmod(h, file_group_count))
    return abs(rem)


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
    only its last field is encoded per key (a 200k-key insert spent 4 s encoding the rest)."""
    (prefix, suffix), schema = _record_frame(file_name, table_version), _info_schema(table_version)
    out = []
    buf = io.BytesIO()
    for key in sorted(locations):
        part, fid, millis = locations[key]
        buf.seek(0)
        buf.truncate()
        fastavro.schemaless_writer(buf, schema, {**_file_info(part, fid), "instantTime": millis})
        out.append((key.encode("utf-8"), prefix + buf.getvalue() + suffix))
    return out


# ------------------------------------------------------------------------ reading
def _listed(table_config: Any) -> list[str]:
    return [p.strip() for p in (table_config.get(METADATA_PARTITIONS) or "").split(",") if p.strip()]


def has_record_index(table_config: Any) -> bool:
    return RECORD_INDEX_PARTITION in _listed(table_config)


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

    def take(pairs: Any, schema: str | None, where: str) -> None:
        for key, record in _decode_values(pairs, schema, where):
            if wanted is not None and key not in wanted:
                continue
            info = record.get("recordIndexMetadata")
            if int(record.get("type") or 0) != TYPE_RECORD_INDEX or info is None:
                raise HoodieCorruptedDataError(f"{where}: record {key!r} of the record index is not a type-5 record.")
            out[key] = info

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
        for key in keys:
            if key is not None:
                groups.setdefault(file_group_index(key, files.count), set()).add(key)  # type: ignore[union-attr]
    out: dict[str, Location] = {}
    for index, wanted in sorted(groups.items()):
        for key, info in _merge_group(files, files.slices[index], wanted, skip_instants).items():
            out[key] = location_of(info)
    return out


# ------------------------------------------------------------------------ what an instant changes
@dataclass
class RecordIndexChange:
    """What one data instant does to the record index."""

    #: key -> (partition, file id, epoch millis of the writing instant)
    upserts: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    deletes: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes)


def _timezone_utc(table: HoodieTable) -> bool:
    return str(table.config.get("hoodie.table.timeline.timezone") or "LOCAL").upper() == "UTC"


def _slice_keys(table: HoodieTable, fs: FileSlice | None, extra_logs: Iterable[str], latest: str | None,
                valid: set[str], start: str | None) -> set[str]:
    if fs is None and not extra_logs:
        return set()
    logs = [lf.path for lf in fs.log_files] if fs is not None else []
    logs += [p for p in extra_logs if p not in logs]
    base = fs.base_file.path if fs is not None and fs.base_file is not None else None
    return set(slice_record_keys(table.storage, base, logs, latest, valid, start).to_pylist())


def _write_change(table: HoodieTable, instant_time: str, meta: CommitMetadata) -> RecordIndexChange:
    timeline = table.reload_timeline()
    view = table.file_system_view(timeline)
    before = {(s.partition_path, s.file_id): s for s in view.latest_merged_file_slices()}
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    millis = instant_millis(instant_time, _timezone_utc(table))
    added: dict[str, tuple[str, str, int]] = {}
    removed: set[str] = set()
    for part, stat in meta.iter_write_stats():
        if not stat.path or not stat.file_id:
            continue
        partition = stat.partition_path if stat.partition_path is not None else (part or "")
        new_group = (stat.prev_commit in (None, "", "null")) or (partition, stat.file_id) not in before
        if not new_group and not stat.num_inserts and not stat.num_deletes:
            continue  # updates in place: the index already points here
        path = table.storage.join(table.base_path, stat.path)
        prev = before.get((partition, stat.file_id))
        is_log = ".log." in stat.path.rsplit("/", 1)[-1]
        if is_log:
            after = _slice_keys(table, prev, [path], instant_time, valid | {instant_time}, start)
        else:
            after = set(slice_record_keys(table.storage, path, [], instant_time, valid, start).to_pylist())
        old = set() if new_group else _slice_keys(table, prev, [], None, valid, start)
        for key in after - old:
            added[key] = (partition, stat.file_id, millis)
        removed |= old - after
    if isinstance(meta, ReplaceCommitMetadata):
        for partition, file_id in meta.replaced_file_ids():
            removed |= _slice_keys(table, before.get((partition, file_id)), [], None, valid, start)
    return RecordIndexChange(added, removed - set(added))


def _rolled_back(action: str, metadata: Mapping[str, Any]) -> set[str]:
    if action == Action.ROLLBACK:
        return set(metadata.get("commitsRollback") or [])
    out: set[str] = set()
    for rollbacks in (metadata.get("hoodieRestoreMetadata") or {}).values():
        for rb in rollbacks or []:
            out.update(rb.get("commitsRollback") or [])
    return out


def _rollback_change(table: HoodieTable, instants: set[str]) -> RecordIndexChange:
    """Undo the blocks of rolled-back ``instants``: each key they touched gets the location
    the index gives it without them (or a delete). Their blocks stay valid to readers (a
    rollback's instants count, Hudi's getValidInstantTimestamps), so ours must follow them."""
    files = _index_files(table)
    skip = frozenset(instants)
    change = RecordIndexChange()
    utc = _timezone_utc(table)
    for fs in files.slices:
        touched: set[str] = set()
        logs = [lf.path for lf in fs.log_files]
        if not logs:
            continue
        scan = scan_log_files(files.storage, logs, None, set(instants), timeline_start=None, decode=False,
                              warn=False)
        refuse_damage(scan, RECORD_INDEX_PARTITION, files.storage)
        for block in scan.blocks:
            if block.instant_time not in instants:
                continue
            if block.block_type == BlockType.DELETE:
                touched.update(r.record_key for r in decode_delete_block(block.block) if r.record_key)
            elif block.block_type == BlockType.HFILE_DATA:
                touched.update(k.decode("utf-8") for k, _ in HFile(block.block.content or b"", "").records())
        if not touched:
            continue
        kept = _merge_group(files, fs, touched, skip)
        for key in touched:
            info = kept.get(key)
            if info is None:
                change.deletes.add(key)
            else:
                part, fid = location_of(info)
                millis = int(info.get("instantTime") or instant_millis(fs.base_instant, utc))
                change.upserts[key] = (part, fid, millis)
    return change


def _compacted_past(table: HoodieTable, instants: set[str]) -> bool:
    """Whether a metadata-table compaction merged the blocks of one of ``instants`` into a
    base file (a compaction ``<T>001`` holds every delta commit up to ``T``)."""
    mdt_timeline = Timeline.load(table.storage, metadata_table_path(table.base_path))
    done = [i.timestamp for i in mdt_timeline.instants if i.action == Action.COMMIT and i.is_completed]
    if not done:
        return False
    through = done[-1][:-3] if len(done[-1]) > 17 else done[-1]
    return any(ts <= through for ts in instants)


def _reconcile_change(table: HoodieTable, skip_instants: frozenset[str] = frozenset()) -> RecordIndexChange:
    """Every difference between the index and the keys of the table's latest file slices
    (a full scan, as building the index is): what a rollback past a metadata-table
    compaction needs, since the rolled-back blocks are merged away and no longer say which
    keys they touched."""
    timeline = table.reload_timeline()
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    utc = _timezone_utc(table)
    current = read_record_index(table, skip_instants=skip_instants)
    change = RecordIndexChange()
    live: set[str] = set()
    for fs in table.file_system_view(timeline).latest_merged_file_slices():
        millis = instant_millis(fs.base_file.commit_time if fs.base_file is not None else fs.base_instant, utc)
        for key in _slice_keys(table, fs, [], None, valid, start):
            live.add(key)
            if current.get(key) != (fs.partition_path, fs.file_id):
                change.upserts[key] = (fs.partition_path, fs.file_id, millis)
    change.deletes = set(current) - live
    return change


def record_index_change(table: HoodieTable, instant: Instant, metadata: Any) -> RecordIndexChange:
    """What data instant ``instant`` (about to complete with ``metadata``) does to the index."""
    if isinstance(metadata, CommitMetadata):
        if metadata.compacted or (metadata.operation_type or "").upper() in ("COMPACT", "LOG_COMPACT"):
            return RecordIndexChange()  # compaction keeps every key in its file group
        return _write_change(table, instant.timestamp, metadata)
    if instant.action in (Action.ROLLBACK, Action.RESTORE):
        instants = _rolled_back(instant.action, metadata)
        if not instants:
            return RecordIndexChange()
        if instant.action == Action.RESTORE:
            # its inner rollbacks leave no instant on the data timeline, so the blocks they
            # wrote stop counting once the restore completes: its own block holds it all
            inner = frozenset(rb.get("startRollbackTime") for rbs in (metadata.get("hoodieRestoreMetadata") or {})
                              .values() for rb in rbs or [] if rb.get("startRollbackTime"))
            return _reconcile_change(table, inner)
        return _reconcile_change(table) if _compacted_past(table, instants) else _rollback_change(table, instants)
    return RecordIndexChange()  # clean, savepoint: no key moves


# ------------------------------------------------------------------------ writing
def append_record_index(mdt: HoodieTable, instant_time: str, change: RecordIndexChange, meta: CommitMetadata) -> None:
    """Append ``change`` to the record index's file groups as delta commit ``instant_time``
    of the metadata table ``mdt`` (one log version per touched group, an HFile data block
    then a delete block), adding their write stats to ``meta``."""
    if not change:
        return
    view = mdt.file_system_view(mdt.reload_timeline())
    slices = sorted(view.latest_file_slices(RECORD_INDEX_PARTITION), key=lambda s: s.file_id)
    count = len(slices)
    by_group: dict[int, RecordIndexChange] = {}
    for key, loc in change.upserts.items():
        by_group.setdefault(file_group_index(key, count), RecordIndexChange()).upserts[key] = loc
    for key in change.deletes:
        by_group.setdefault(file_group_index(key, count), RecordIndexChange()).deletes.add(key)
    version = mdt.format.version
    schema = metadata_record_schema_json(version)
    folder = mdt.storage.join(mdt.base_path, RECORD_INDEX_PARTITION)
    for index, part in sorted(by_group.items()):
        fs = slices[index]
        headers = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema}
        blocks = []
        if part.upserts:
            blocks.append(LogBlock(BlockType.HFILE_DATA, headers,
                                   content=write_hfile(record_index_records(part.upserts, table_version=version), schema)))
        if part.deletes:
            blocks.append(delete_block([DeleteRecord(k, RECORD_INDEX_PARTITION, None) for k in sorted(part.deletes)],
                                       instant_time, schema=schema))
        token = make_write_token(secrets.randbelow(1 << 16), secrets.randbelow(1 << 16), 0)
        log = LogWriter.for_instant(mdt.storage, folder, fs.file_id, fs.base_instant, instant_time, token, mdt.format,
                                    max_file_size=0)
        try:
            results = log.append(blocks)
        finally:
            log.close()
        (last,) = results
        name = last.log_path.rsplit("/", 1)[-1]
        n = len(part.upserts) + len(part.deletes)
        meta.add_write_stat(RECORD_INDEX_PARTITION, WriteStat.new(
            fileId=fs.file_id, path=f"{RECORD_INDEX_PARTITION}/{name}", prevCommit=fs.base_instant, numWrites=n,
            numInserts=len(part.upserts), numDeletes=len(part.deletes), totalWriteBytes=last.size,
            partitionPath=RECORD_INDEX_PARTITION, totalLogBlocks=len(blocks),
            fileSizeInBytes=mdt.storage.size(last.log_path), logVersion=last.version, logOffset=last.offset,
            baseFile=fs.base_file.file_name if fs.base_file is not None else "", logFiles=[name]))


# ------------------------------------------------------------------------ building
def file_group_count(keys: int, minimum: int, maximum: int, max_group_bytes: int, growth: float) -> int:
    """estimateFileGroupCount: room for ``growth`` times the keys at 48 bytes each, within
    [minimum, maximum] file groups of at most ``max_group_bytes``."""
    if minimum >= maximum:
        return max(1, maximum)
    wanted = math.ceil(keys * growth * AVERAGE_RECORD_SIZE / max(1, max_group_bytes))
    return max(minimum, min(maximum, wanted))


def _init_instant(table: HoodieTable, mdt_timeline: Timeline) -> str:
    """createIndexInitTimestamp of the v6 writer: the latest completed data instant (or
    Hudi's solo-commit time) + ``010``, ``011``, ... the first the metadata table lacks;
    Hudi 1.x counts ``…000``, ``…001``, ... instead (files_bootstrap.initialization_instant)."""
    if table.config.table_version >= 8:
        return initialization_instant(table.config.table_version, {i.timestamp for i in mdt_timeline.instants})
    last = table.reload_timeline().completed().last()
    base = last.timestamp if last is not None else "00000000000000"
    taken = {i.timestamp for i in mdt_timeline.instants}
    offset = 0
    while f"{base}{INIT_SUFFIX + offset:03d}" in taken:
        offset += 1
    return f"{base}{INIT_SUFFIX + offset:03d}"


def _remove_failed_build(table: HoodieTable, mdt: HoodieTable, writer: TimelineWriter) -> None:
    """A build that died before listing the partition left its folder and a delta commit of
    its own (a time no data instant has; pending, or completed with only record-index files):
    both go before building again, as Hudi rolls back a failed metadata-table write (under
    the table lock, and no reader takes an unlisted partition)."""
    folder = mdt.storage.join(mdt.base_path, RECORD_INDEX_PARTITION)
    if not mdt.storage.exists(folder):
        return
    data_times = {i.timestamp for i in table.reload_timeline().instants}
    timeline = mdt.reload_timeline()
    for inst in timeline.instants:
        if inst.action != Action.DELTA_COMMIT or inst.timestamp in data_times:
            continue
        if inst.is_completed:
            written = timeline.commit_metadata(inst).partition_to_write_stats
            if set(written) != {RECORD_INDEX_PARTITION}:
                continue
        writer.delete_instant_files(inst.timestamp, Action.DELTA_COMMIT)
    mdt.storage.delete_dir(folder)


def initialize_record_index(table: HoodieTable, minimum: int, maximum: int, max_group_bytes: int,
                            growth: float) -> str:
    """Build ``record_index`` from the keys of the table's latest file slices (Hudi's
    readRecordKeysFromBaseFiles / file slices), as a delta commit of the metadata table,
    then list it in ``hoodie.table.metadata.partitions``; returns the init instant. Runs
    under the table lock, before the write's own instant exists."""
    storage, mdt_base = table.storage, metadata_table_path(table.base_path)
    mdt = type(table)(storage, mdt_base, load_metadata_config(storage, mdt_base))
    mdt.write_config = table.write_config
    timeline = table.reload_timeline()
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    utc = _timezone_utc(table)
    locations: dict[str, tuple[str, str, int]] = {}
    for fs in table.file_system_view(timeline).latest_merged_file_slices():
        millis = instant_millis(fs.base_file.commit_time if fs.base_file is not None else fs.base_instant, utc)
        for key in _slice_keys(table, fs, [], None, valid, start):
            locations[key] = (fs.partition_path, fs.file_id, millis)
    count = file_group_count(len(locations), minimum, maximum, max_group_bytes, growth)
    writer = mdt.timeline_writer()
    _remove_failed_build(table, mdt, writer)
    instant = _init_instant(table, mdt.reload_timeline())
    writer.create_requested(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    write_partition_metadata(storage, mdt_base, RECORD_INDEX_PARTITION, instant)
    groups: list[dict[str, tuple[str, str, int]]] = [{} for _ in range(count)]
    for key, loc in locations.items():
        groups[file_group_index(key, count)][key] = loc
    schema = metadata_record_schema_json(mdt.format.version)
    meta = CommitMetadata(operation_type="BULK_INSERT_PREPPED", extra_metadata={"schema": schema})
    for index, group in enumerate(groups):
        write_empty_log(mdt, RECORD_INDEX_PARTITION, file_group_id(index), instant)
        name = f"{file_group_id(index)}_{make_write_token(index, 0, 0)}_{instant}.hfile"
        data = write_hfile(record_index_records(group, name, mdt.format.version), schema)
        storage.write_bytes(storage.join(mdt_base, RECORD_INDEX_PARTITION, name), data)
        meta.add_write_stat(RECORD_INDEX_PARTITION, WriteStat.new(
            fileId=file_group_id(index), path=f"{RECORD_INDEX_PARTITION}/{name}", prevCommit="null",
            numWrites=len(group), numInserts=len(group), totalWriteBytes=len(data),
            partitionPath=RECORD_INDEX_PARTITION, fileSizeInBytes=len(data)))
    mdt.complete(Instant(instant, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    table.update_config({METADATA_PARTITIONS: ",".join(sorted(set(_listed(table.config)) | {RECORD_INDEX_PARTITION}))})
    return instant



def ensure_record_index(table: HoodieTable, config: Any) -> bool:
    """Under the table lock, before a write's instant exists: build the record index when
    ``hoodie.metadata.record.index.enable`` asks for it and the table has none (as Hudi's
    writer initializes an enabled partition). Returns whether the table now has one.
    ``table.config`` is the one read under that lock (by ensure_files_partition, just before;
    every change since went through ``update_config``, which keeps it)."""
    from airflow_hoodie.config_keys.record_index import (  # noqa: PLC0415 - the catalog is a leaf
        RECORD_INDEX_ENABLE,
        RECORD_INDEX_GROWTH_FACTOR,
        RECORD_INDEX_MAX_FILE_GROUP_SIZE,
        RECORD_INDEX_MAX_FILE_GROUPS,
        RECORD_INDEX_MIN_FILE_GROUPS,
    )

    if has_record_index(table.config):
        return True
    if not config.get_bool(RECORD_INDEX_ENABLE):
        return False
    initialize_record_index(table, int(config.get(RECORD_INDEX_MIN_FILE_GROUPS)),
                            int(config.get(RECORD_INDEX_MAX_FILE_GROUPS)),
                            int(config.get(RECORD_INDEX_MAX_FILE_GROUP_SIZE)),
                            float(config.get(RECORD_INDEX_GROWTH_FACTOR)))
    return True
