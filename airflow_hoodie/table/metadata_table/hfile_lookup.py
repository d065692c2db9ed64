"""Point lookups in an HFile through its root data index (Hudi's HoodieAvroHFileReader.getRecordsByKeys).

The record index answers "where is key k" for a batch of keys; reading a whole file group
to answer a few keys would cost as much as a scan. The load-on-open section of an HFile
starts with the root data index: per data block its offset, on-disk size and first key
(a KeyValue key: row length, row, then family, qualifier, time stamp and type; HBase may
shorten it to a key between two blocks, which keeps the order). Each wanted key is looked
up by binary search on those rows, and only the data blocks that can hold a wanted key are
read (each once, however many keys it holds). A multi-level index (files too big for one
root block, which the metadata table's record-index groups do not reach at Hudi's
defaults) is read by a full scan instead.
"""

from __future__ import annotations

import bisect
import struct
from typing import Container, Iterable, Iterator

from airflow_hoodie.table.metadata_table.hfile_reader import (
    DATA_MAGICS,
    MAX_MEMSTORE_TS_KEY,
    TRAILER_SIZE,
    HFile,
    _hadoop_vlong,
    _proto_fields,
    _varint,
)

ROOT_INDEX_MAGIC = b"IDXROOT2"
#: HFileTrailer's protobuf fields: data index count, index levels
_DATA_INDEX_COUNT = 5
_INDEX_LEVELS = 8


def _trailer_fields(hfile: HFile) -> dict[int, int | bytes]:
    raw = hfile.data[-TRAILER_SIZE:]
    length, pos = _varint(raw, 8)
    return dict(_proto_fields(raw[pos:pos + length]))


def _root_index(hfile: HFile) -> list[tuple[int, bytes]] | None:
    """(offset, first row) of every data block, or None when the index has more levels."""
    fields = _trailer_fields(hfile)
    if int(fields.get(_INDEX_LEVELS, 1)) != 1:
        return None
    count = int(fields.get(_DATA_INDEX_COUNT, 0))
    magic, body, _ = hfile._block(hfile.trailer.load_on_open_offset)
    if magic != ROOT_INDEX_MAGIC:
        raise hfile._fail(f"no root data index at byte {hfile.trailer.load_on_open_offset}")
    out, pos = [], 0
    for _ in range(count):
        offset, _size = struct.unpack_from(">qi", body, pos)
        key_len, pos = _hadoop_vlong(body, pos + 12)
        key = body[pos:pos + key_len]
        row_len = struct.unpack_from(">h", key, 0)[0]
        out.append((offset, bytes(key[2:2 + row_len])))
        pos += key_len
    return out


def _data_block_cells(hfile: HFile, offset: int, wanted: Container[bytes] | None = None
                      ) -> Iterator[tuple[bytes, bytes]]:
    """The cells of the data block the root index points at ``offset`` (a lookup reads only
    the blocks its keys can be in); only the rows in ``wanted`` when given."""
    magic, body, _ = hfile._block(offset)
    if magic not in DATA_MAGICS:
        raise hfile._fail(f"the data index points at a {magic!r} block at byte {offset}")
    return hfile._cells(body, MAX_MEMSTORE_TS_KEY in hfile.file_info, wanted)


def get_records(hfile: HFile, keys: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """(row key, value) of the wanted ``keys`` the file holds, in key order."""
    wanted = sorted(set(keys))
    if not wanted or hfile.trailer.entry_count == 0:
        return
    index = _root_index(hfile)
    if index is None:
        want = set(wanted)
        yield from ((k, v) for k, v in hfile.records() if k in want)
        return
    rows = [row for _, row in index]
    blocks: dict[int, set[bytes]] = {}
    for key in wanted:
        at = bisect.bisect_right(rows, key) - 1
        if at >= 0:
            blocks.setdefault(at, set()).add(key)
    for at in sorted(blocks):
        yield from _data_block_cells(hfile, index[at][0], blocks[at])


def get_prefixed_records(hfile: HFile, prefixes: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """(row key, value) of the rows starting with one of ``prefixes``, in key order: the rows
    of a prefix are contiguous, so only the data block where the prefix would sit and the
    blocks after it that still start inside it are read (a secondary index's entries of one
    value: ``escape(value)$``)."""
    wanted = sorted(set(prefixes))
    if not wanted or hfile.trailer.entry_count == 0:
        return
    index = _root_index(hfile)
    if index is None:
        yield from ((k, v) for k, v in hfile.records() if any(k.startswith(p) for p in wanted))
        return
    rows = [row for _, row in index]
    blocks: set[int] = set()
    for prefix in wanted:
        at = max(0, bisect.bisect_right(rows, prefix) - 1)
        blocks.add(at)
        while at + 1 < len(rows) and rows[at + 1].startswith(prefix):
            at += 1
            blocks.add(at)
    for at in sorted(blocks):
        for key, value in _data_block_cells(hfile, index[at][0]):
            if any(key.startswith(p) for p in wanted):
                yield key, value
