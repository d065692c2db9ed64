"""Reading Hudi log files: block iteration with Hudi's corruption handling, and the
merged-scan block selection of Hudi's log record scanner.

Corruption handling follows ``HoodieLogFileReader`` (0.14/0.15):

* every block must start with ``#HUDI#``; a file whose first bytes are not the magic is
  rejected (Hudi throws ``CorruptedLogFileException``);
* a block is *corrupt* when its size field cannot be read, when the size runs past the
  end of the file, when the reverse pointer at ``start + 14 + size - 8`` does not equal
  ``size + 6``, or when the 6 bytes after the block are neither EOF nor the next magic
  (so garbage written after a complete block marks that block corrupt, as in Hudi);
* for a corrupt block the reader scans forward from just after its magic for the next
  ``#HUDI#``; the bytes in between become one CORRUPT block and reading resumes there;
* fewer than 6 trailing bytes after the last block are ignored (Hudi hits EOF reading
  the next magic).

A block whose framing is sound but whose inside is inconsistent (header running past
the block, invalid type ordinal) raises :class:`HoodieCorruptedLogError`, as Hudi fails
the read then too.

A corrupt block that no rollback command block cancels is skipped by the merged scan, as
Hudi's log record reader skips it, but never in silence (issue 35): the scan reports it in
:attr:`LogScanResult.damaged`, and a data-table read logs one warning per scan naming the
file. A metadata-table reader refuses such a scan instead (metadata_table/damage.py): a
block it skipped would read as "key absent" or "file absent".

Why a warning, not an error, for a data read (also when the metadata table recorded a
larger size, i.e. committed bytes are gone): Hudi's reader skips the block and reads on,
logging "Found a corrupt block which was not rolled back" without naming the file. A Hudi
user expects the table to stay readable; an error would fail every read of the table for
one damaged file whose rows no read can bring back. The warning names the file and says
whether committed bytes are gone, so the operator knows which file to put back.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, MutableMapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.errors import HoodieError, HoodieIOError, HoodieNotSupportedError
from airflow_hoodie.table.log.cdc_block import is_cdc_log_name
from airflow_hoodie.table.log.data_block import decode_data_block
from airflow_hoodie.table.log.delete_block import DeleteRecord, decode_delete_block
from airflow_hoodie.table.log.log_block import (
    MAGIC,
    BlockType,
    HeaderKey,
    HoodieCorruptedLogError,
    LogBlock,
    header_names,
    parse_block_body,
)
from airflow_hoodie.table.storage.storage import Storage

log = logging.getLogger(__name__)

INT64 = struct.Struct(">q")
_SCAN_CHUNK = 1024 * 1024
_MIN_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8  # version, type, empty header, clen, empty footer, rp


class _Source:
    """Random access to a file's bytes (a pyarrow NativeFile or an in-memory buffer)."""

    def __init__(self, data: bytes | None = None, handle: Any = None, size: int = 0) -> None:
        self._data = data
        self._handle = handle
        self.size = len(data) if data is not None else size

    def read(self, offset: int, n: int) -> bytes:
        if offset >= self.size or n <= 0:
            return b""
        n = min(n, self.size - offset)
        if self._data is not None:
            return self._data[offset : offset + n]
        return self._handle.read_at(n, offset)

    def find_magic(self, start: int) -> int:
        """Offset of the next magic at or after ``start``, or the file size."""
        pos = start
        while pos < self.size:
            chunk = self.read(pos, _SCAN_CHUNK)
            i = chunk.find(MAGIC)
            if i >= 0:
                return pos + i
            if pos + len(chunk) >= self.size:
                break
            pos += len(chunk) - (len(MAGIC) - 1)
        return self.size


def _is_block_corrupt(src: _Source, body: int, block_size: int) -> bool:
    """Hudi's ``isBlockCorrupt``; ``body`` is the offset right after the size field."""
    if block_size < 8:
        return True
    end = body + block_size
    if end > src.size:
        return True  # size runs past EOF
    rp = src.read(end - 8, 8)
    if len(rp) < 8 or INT64.unpack(rp)[0] - len(MAGIC) != block_size:
        return True
    nxt = src.read(end, len(MAGIC))
    return len(nxt) == len(MAGIC) and nxt != MAGIC


def iter_blocks(src: _Source, where: str, lenient_start: bool = False) -> Iterator[LogBlock]:
    """Blocks of a file in order (corrupt ones with ``corrupt=True``)."""
    pos = 0
    while pos < src.size:
        magic = src.read(pos, len(MAGIC))
        if len(magic) < len(MAGIC):
            return  # partial trailing bytes: EOF while reading the magic, as Hudi
        if magic != MAGIC:
            if not lenient_start:
                raise HoodieCorruptedLogError(
                    f"{where}: no '#HUDI#' magic at byte {pos}; this is not a Hudi log file "
                    "or its beginning was overwritten"
                )
            nxt = src.find_magic(pos + 1)
            yield _corrupt(src, pos, pos, nxt)
            pos = nxt
            continue
        body = pos + len(MAGIC)
        size_bytes = src.read(body, 8)
        if len(size_bytes) < 8:
            nxt = src.find_magic(body)
            yield _corrupt(src, pos, body, nxt)
            pos = nxt
            continue
        (block_size,) = INT64.unpack(size_bytes)
        if _is_block_corrupt(src, body + 8, block_size):
            nxt = src.find_magic(body)
            yield _corrupt(src, pos, body, nxt)
            pos = nxt
            continue
        total = len(MAGIC) + 8 + block_size
        if block_size < _MIN_BLOCK_SIZE:
            raise HoodieCorruptedLogError(
                f"{where}: block at byte {pos} declares size {block_size}, smaller than an "
                "empty block"
            )
        buf = src.read(pos, total)
        yield parse_block_body(buf, 0, where=where, file_offset=pos)
        pos += total


def _corrupt(src: _Source, block_start: int, skipped_from: int, next_offset: int) -> LogBlock:
    content = src.read(skipped_from, next_offset - skipped_from)
    return LogBlock(
        block_type=BlockType.CORRUPT,
        headers={},
        footers={},
        content=content,
        offset=block_start,
        size=next_offset - block_start,
        version=0,
        corrupt=True,
    )


def read_log_blocks(
    storage: Storage, path: str, reverse: bool = False, *, lenient_start: bool = False,
    sizes: MutableMapping[str, int] | None = None,
) -> Iterator[LogBlock]:
    """Iterate the blocks of the log file at ``path`` (an fs path of ``storage``).

    Corrupt regions are yielded as CORRUPT blocks with ``corrupt=True``. ``reverse``
    yields the same blocks last-first. ``lenient_start`` turns a missing magic at the
    start of the file into a CORRUPT block instead of an error (for inspection tools).
    ``sizes``: receives ``path -> size on storage`` (known from the open, no extra call).
    """
    where = storage.uri(path)
    handle = storage.open_input(path)
    try:
        try:
            size = handle.size()
        except (OSError, pa.ArrowException) as exc:
            raise HoodieIOError(f"Cannot stat log file {where!r}: {exc}") from exc
        if sizes is not None:
            sizes[path] = size
        src = _Source(handle=handle, size=size)
        blocks = iter_blocks(src, where, lenient_start)
        if reverse:
            yield from reversed(list(blocks))
        else:
            yield from blocks
    except (OSError, pa.ArrowException) as exc:
        raise HoodieIOError(f"Cannot read log file {where!r}: {exc}") from exc
    finally:
        handle.close()


def read_log_blocks_from_bytes(data: bytes, where: str = "<bytes>") -> list[LogBlock]:
    """All blocks of an in-memory log file (tests, archived timeline helpers)."""
    return list(iter_blocks(_Source(data=data), where))


# ----------------------------------------------------------------------------------
# merged scan
# ----------------------------------------------------------------------------------


@dataclass
class ScannedBlock:
    """A data or delete block that survived the scan, with where it came from."""

    instant_time: str
    block_type: BlockType
    log_path: str
    block: LogBlock
    table: pa.Table | None = None
    deletes: list[DeleteRecord] | None = None

    @property
    def is_delete(self) -> bool:
        return self.block_type == BlockType.DELETE

    @property
    def schema(self) -> str | None:
        return self.block.schema


@dataclass(frozen=True)
class DamagedBlock:
    """A corrupt region of a log file that no rollback cancelled: bytes the scan skipped.

    ``recorded_size``: the size the file listing gave for the file (the metadata table's
    record of it, when the listing came from there) when the file on storage is smaller,
    i.e. bytes of committed blocks are gone, not just a torn tail of a failed write."""

    path: str
    offset: int
    size: int
    file_size: int
    recorded_size: int | None = None
    #: the file's path on its storage (``path`` is its URI, for messages)
    fs_path: str = ""

    def describe(self) -> str:
        text = f"{self.path} (a corrupt or truncated block at byte {self.offset}, {self.size} bytes"
        if self.recorded_size is not None:
            text += (f"; the file is {self.file_size} bytes on storage but the metadata table records "
                     f"{self.recorded_size}: committed bytes are gone")
        return text + ")"


@dataclass
class LogScanResult:
    """What a file slice's log files contribute, in log order.

    ``blocks`` interleaves data and delete blocks in the order Hudi applies them (a
    delete only affects records of earlier blocks, a later data block re-inserts).
    ``data_blocks`` and ``deletes`` are the same content split by kind, for callers that
    merge by instant/ordering value and need no interleaving.
    """

    blocks: list[ScannedBlock] = field(default_factory=list)
    total_blocks: int = 0
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    rolled_back_blocks: int = 0
    skipped_blocks: int = 0
    log_files: list[str] = field(default_factory=list)
    #: corrupt blocks no rollback block cancelled (Hudi skips them; we report them)
    damaged: list[DamagedBlock] = field(default_factory=list)
    #: path -> size on storage of every log file read
    file_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def data_blocks(self) -> list[pa.Table]:
        return [b.table for b in self.blocks if not b.is_delete and b.table is not None]

    @property
    def data_instants(self) -> list[str]:
        return [b.instant_time for b in self.blocks if not b.is_delete]

    @property
    def deletes(self) -> list[DeleteRecord]:
        return [d for b in self.blocks if b.is_delete for d in (b.deletes or [])]

    @property
    def instants(self) -> list[str]:
        """Distinct instants of the surviving blocks, in log order."""
        seen: dict[str, None] = {}
        for b in self.blocks:
            seen.setdefault(b.instant_time, None)
        return list(seen)


def _is_committed(
    instant: str, valid: set[str] | frozenset[str], timeline_start: str | None
) -> bool:
    if instant in valid:
        return True
    # containsOrBeforeTimelineStarts: instants older than the active timeline were
    # archived, so they are committed
    return timeline_start is not None and instant < timeline_start


def _queued_blocks(storage: Storage, log_paths: Iterable[str], latest_instant: str | None, valid: frozenset[str],
                   timeline_start: str | None, inflight: frozenset[str], result: LogScanResult
                   ) -> list[tuple[LogBlock, str]]:
    """:func:`scan_log_files`'s selection: the (block, path) a rollback block did not cancel,
    corrupt ones included, counted into ``result`` as they are read."""
    queue: list[tuple[LogBlock, str]] = []
    for path in log_paths:
        result.log_files.append(path)
        for block in read_log_blocks(storage, path, sizes=result.file_sizes):
            result.total_blocks += 1
            if block.corrupt or block.block_type == BlockType.CORRUPT:
                result.corrupt_blocks += 1
                queue.append((block, path))
                continue
            if block.is_data or block.is_delete:
                instant = block.instant_time
                if instant is None:
                    raise HoodieCorruptedLogError(
                        f"{storage.uri(path)}: {block.type_name} block at byte {block.offset} "
                        "has no INSTANT_TIME header"
                    )
                if instant in inflight or not _is_committed(instant, valid, timeline_start):
                    result.skipped_blocks += 1
                    continue
                if latest_instant is not None and instant > latest_instant:
                    result.skipped_blocks += 1
                    continue
                queue.append((block, path))
            elif block.is_command:
                if not block.is_rollback:
                    raise HoodieCorruptedLogError(
                        f"{storage.uri(path)}: command block at byte {block.offset} has "
                        f"unsupported command type {block.headers.get(3)!r}"
                    )
                result.rollback_blocks += 1
                target = block.target_instant_time
                before = len(queue)
                queue = [
                    (b, p)
                    for (b, p) in queue
                    if not (b.corrupt or b.block_type == BlockType.CORRUPT)
                    and b.instant_time != target
                ]
                result.rolled_back_blocks += before - len(queue)
    return queue


def scan_log_files(
    storage: Storage,
    log_paths: Iterable[str],
    latest_instant: str | None,
    valid_instants: Iterable[str],
    *,
    timeline_start: str | None = None,
    inflight_instants: Iterable[str] = (),
    decode: bool = True,
    columns: Sequence[str] | None = None,
    recorded_sizes: Mapping[str, int] | None = None,
    warn: bool = True,
) -> LogScanResult:
    """Select the blocks of a file group's log files the way Hudi's merged log record
    scanner does (``scanInternalV1``), and decode them.

    ``log_paths`` must be in Hudi's log file order (version, then write token).
    A data/delete block is skipped when its ``INSTANT_TIME`` is inflight, or not in
    ``valid_instants`` (the completed commit-timeline instants) unless it is older than
    ``timeline_start`` (archived), or is after ``latest_instant``. A rollback command
    block drops every earlier queued block of its ``TARGET_INSTANT_TIME`` and every
    queued corrupt block. Corrupt blocks themselves are never returned.
    ``decode=False`` leaves ``table``/``deletes`` unset (only the selection). ``columns``:
    the fields data blocks are decoded with (None: all; see
    :func:`airflow_hoodie.table.log.data_block.decode_avro_data_block`).

    Corrupt blocks no rollback cancelled land in ``damaged``; with ``warn`` (a data-table
    read) the scan logs them in one warning naming each file. ``recorded_sizes``: the
    sizes the file listing gave (from the metadata table: what it recorded when the file's
    instants committed); a file now smaller lost committed bytes, and the warning says so,
    even when it was cut exactly at a block boundary and no block reads as corrupt.
    """
    result = LogScanResult()
    # a CDC table's .cdc logs sit in the slice of the commit that wrote them (the cleaner removes
    # them with it) but hold change records, not the slice's rows: Hudi's merged log record
    # reader leaves them out too (HoodieLogFile.isCDC)
    log_paths = [p for p in log_paths if not is_cdc_log_name(p.rsplit("/", 1)[-1])]
    queue = _queued_blocks(storage, log_paths, latest_instant, frozenset(valid_instants), timeline_start,
                           frozenset(inflight_instants), result)
    shrunk = _shrunk(result.file_sizes, recorded_sizes)
    for block, path in queue:
        if block.corrupt or block.block_type == BlockType.CORRUPT:
            # Hudi: "Found a corrupt block which was not rolled back", and skips it
            result.damaged.append(DamagedBlock(storage.uri(path), block.offset, block.size,
                                               result.file_sizes.get(path, 0), shrunk.pop(path, None), path))
            continue
        if str(block.headers.get(HeaderKey.IS_PARTIAL, "")).strip().lower() == "true":
            raise HoodieNotSupportedError(
                f"{storage.uri(path)}: the {block.type_name} block at byte {block.offset} holds partial updates "
                "(Hudi 1.x hoodie.write.partial.update.mode); airflow-hoodie does not merge them, and reading "
                "them as whole records would null the columns they leave out. Read this table with Hudi, "
                "or compact it with Hudi first.")
        sb = ScannedBlock(block.instant_time or "", BlockType(block.block_type), path, block)
        if decode:
            _decode_into(sb, storage.uri(path), columns)
        result.blocks.append(sb)
    for path, recorded in shrunk.items():  # cut at a block boundary: no corrupt block, still a loss
        result.damaged.append(DamagedBlock(storage.uri(path), result.file_sizes[path], 0,
                                           result.file_sizes[path], recorded, path))
    if warn and result.damaged:
        log.warning(
            "Skipped damaged log data, as Hudi's readers do; rows it held are missing from this read: %s. Put the "
            "file back from a copy, or restore the table to a savepoint from before the damage.",
            "; ".join(d.describe() for d in result.damaged))
    return result


def _shrunk(actual: Mapping[str, int], recorded: Mapping[str, int] | None) -> dict[str, int]:
    """path -> recorded size of the files now smaller on storage than the listing recorded.

    Only smaller counts: on version 6 a later write may append to a log file after the
    listing read its size, so a larger file is normal; a smaller one lost bytes of blocks
    whose instants had committed (the metadata table records a file's size at commit)."""
    if not recorded:
        return {}
    return {p: recorded[p] for p, size in actual.items() if recorded.get(p) and size < recorded[p]}


def _decode_into(sb: ScannedBlock, where: str, columns: Sequence[str] | None = None) -> None:
    try:
        if sb.block_type == BlockType.DELETE:
            sb.deletes = decode_delete_block(sb.block)
        else:
            sb.table = decode_data_block(sb.block, columns)
    except HoodieCorruptedLogError as exc:
        raise HoodieCorruptedLogError(f"{where}: {exc}") from exc


# ----------------------------------------------------------------------------------
# inspection
# ----------------------------------------------------------------------------------


def block_record_count(block: LogBlock) -> int | None:
    """Number of records in a block without decoding the records (None if unknown)."""
    if block.corrupt:
        return None
    t = block.block_type
    if t in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        if len(block.content) < 8:
            return 0
        return struct.unpack_from(">i", block.content, 4)[0]
    if t == BlockType.PARQUET_DATA:
        if not block.content:
            return 0

        return pq.ParquetFile(pa.BufferReader(block.content)).metadata.num_rows
    if t == BlockType.DELETE:
        return len(decode_delete_block(block))
    if t == BlockType.COMMAND:
        return 0
    return None


def describe_log_file(
    storage: Storage, path: str, with_records: bool = False
) -> list[dict[str, Any]]:
    """One dict per block for ``airflow-hoodie log FILE [--records]``.

    Keys: offset, size, type, version, headers (by name; SCHEMA included), footers,
    content_length, record_count, corrupt, and ``records`` (list of dicts; for delete
    blocks record_key/partition_path/ordering_value) when ``with_records``. A block that
    cannot be decoded gets an ``error`` message instead of failing the whole listing.
    """
    out: list[dict[str, Any]] = []
    for block in read_log_blocks(storage, path, lenient_start=True):
        entry: dict[str, Any] = {
            "offset": block.offset,
            "size": block.size,
            "type": block.type_name,
            "version": block.version,
            "headers": header_names(block.headers),
            "footers": header_names(block.footers),
            "content_length": len(block.content),
            "record_count": None,
            "corrupt": bool(block.corrupt),
        }
        try:
            entry["record_count"] = block_record_count(block)
            if with_records and not block.corrupt:
                if block.block_type == BlockType.DELETE:
                    entry["records"] = [
                        {
                            "record_key": d.record_key,
                            "partition_path": d.partition_path,
                            "ordering_value": d.ordering_value,
                        }
                        for d in decode_delete_block(block)
                    ]
                elif block.is_data:
                    entry["records"] = decode_data_block(block).to_pylist()
        except HoodieError as exc:
            entry["error"] = str(exc)
        except (pa.ArrowException, struct.error, ValueError) as exc:
            entry["error"] = f"cannot decode block: {exc}"
        out.append(entry)
    return out


__all__ = [
    "DamagedBlock",
    "LogScanResult",
    "ScannedBlock",
    "block_record_count",
    "describe_log_file",
    "read_log_blocks",
    "read_log_blocks_from_bytes",
    "scan_log_files",
]
