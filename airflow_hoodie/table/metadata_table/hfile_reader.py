"""Reading HFiles (version 3), the base and log-block format of Hudi's metadata table.

Hudi writes its metadata table as HBase-style HFiles: a sequence of blocks, each with a
33-byte header (magic, on-disk and uncompressed sizes, previous block offset, checksum
type, bytes per checksum, on-disk data size), then the load-on-open section (root data
index, meta index, file info) and a 4096-byte trailer that says where everything is. The
trailer of version 3 is a length-delimited protobuf message; the file info block is a
``PBUF``-prefixed protobuf map whose ``schema`` entry is the Avro schema of the values.

A metadata-table listing needs every record, so this reader scans the data blocks in
file order (the data index only speeds up point lookups) and yields ``(key, value)``
pairs, the key being the HBase row (the metadata record key) and the value the record's
Avro bytes. Anything it does not understand is an error: a listing read halfway would
silently hide files.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Container, Iterator

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieNotSupportedError

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
DATA_MAGICS = (b"DATABLK*", b"DATABLKE")
FILE_INFO_MAGIC = b"FILEINF2"
PBUF_MAGIC = b"PBUF"
BLOCK_HEADER_SIZE = 33
MAX_MEMSTORE_TS_KEY = b"MAX_MEMSTORE_TS_KEY"
SCHEMA_KEY = b"schema"

#: Hadoop's compression codec ids as HBase's Compression.Algorithm orders them
CODECS = {0: "LZO", 1: "GZ", 2: "NONE", 3: "SNAPPY", 4: "LZ4", 5: "BZIP2", 6: "ZSTD"}

_HEADER = struct.Struct(">8siiqBii")
INT32 = struct.Struct(">i")
#: a cell's key length, value length and its key's row length
_CELL_HEADER = struct.Struct(">iih")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A protobuf base-128 varint at ``pos``; (value, next position)."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise HoodieCorruptedDataError("HFile protobuf message ends inside a varint.")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _proto_fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message: varints and length-delimited fields."""
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(buf, pos)
            yield number, buf[pos:pos + length]
            pos += length
        elif wire == 1:
            yield number, buf[pos:pos + 8]
            pos += 8
        elif wire == 5:
            yield number, buf[pos:pos + 4]
            pos += 4
        else:
            raise HoodieCorruptedDataError(f"HFile protobuf field {number} has unknown wire type {wire}.")


def _hadoop_vlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Hadoop WritableUtils' variable-length long (the cell's memstore timestamp)."""
    first = struct.unpack_from(">b", buf, pos)[0]
    if first >= -112:
        return first, pos + 1
    size = -119 - first if first < -120 else -111 - first
    value = 0
    for i in range(size - 1):
        value = (value << 8) | buf[pos + 1 + i]
    return (~value if first < -120 else value), pos + size


@dataclass(frozen=True)
class Trailer:
    major_version: int
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    entry_count: int
    first_data_block_offset: int
    last_data_block_offset: int
    codec: str
    comparator: str


@dataclass
class HFile:
    """One HFile in memory: its trailer, file info and records."""

    data: bytes
    where: str = "HFile"
    trailer: Trailer = field(init=False)
    file_info: dict[bytes, bytes] = field(init=False)

    def __post_init__(self) -> None:
        self.trailer = self._read_trailer()
        self.file_info = self._read_file_info()

    # ------------------------------------------------------------------ structure
    def _fail(self, what: str) -> HoodieCorruptedDataError:
        return HoodieCorruptedDataError(f"{self.where}: {what}; the metadata table file is damaged. Drop the "
                                        "metadata table with Hudi (or let our next write remove it) and read by "
                                        "listing meanwhile (hoodie.metadata.enable=false).")

    def _read_trailer(self) -> Trailer:
        if len(self.data) < TRAILER_SIZE:
            raise self._fail(f"{len(self.data)} bytes is too small for an HFile (trailer alone is {TRAILER_SIZE})")
        raw = self.data[-TRAILER_SIZE:]
        if raw[:8] != TRAILER_MAGIC:
            raise self._fail("no HFile trailer magic at the end")
        minor, major = raw[-4], int.from_bytes(raw[-3:], "big")
        if major != 3:
            raise HoodieNotSupportedError(f"{self.where}: HFile version {major}.{minor} is not supported; "
                                          "Hudi writes version 3.")
        length, pos = _varint(raw, 8)
        fields = dict(_proto_fields(raw[pos:pos + length]))
        codec_id = int(fields.get(12, 2))
        return Trailer(
            major_version=major, minor_version=minor,
            file_info_offset=int(fields.get(1, 0)), load_on_open_offset=int(fields.get(2, 0)),
            entry_count=int(fields.get(7, 0)), first_data_block_offset=int(fields.get(9, 0)),
            last_data_block_offset=int(fields.get(10, 0)), codec=CODECS.get(codec_id, f"codec #{codec_id}"),
            comparator=bytes(fields.get(11, b"")).decode("utf-8", "replace"),  # type: ignore[arg-type]
        )

    def _block(self, offset: int) -> tuple[bytes, bytes, int]:
        """(magic, uncompressed payload, offset of the next block) of the block at ``offset``."""
        if offset + BLOCK_HEADER_SIZE > len(self.data):
            raise self._fail(f"block header at byte {offset} runs past the end")
        magic, on_disk, uncompressed, _prev, _ck_type, _per_ck, data_with_header = _HEADER.unpack_from(self.data, offset)
        end = offset + BLOCK_HEADER_SIZE + on_disk
        if on_disk < 0 or uncompressed < 0 or end > len(self.data) or data_with_header > BLOCK_HEADER_SIZE + on_disk:
            raise self._fail(f"block at byte {offset} has impossible sizes")
        payload = self.data[offset + BLOCK_HEADER_SIZE: offset + data_with_header]
        codec = self.trailer.codec
        if magic in (FILE_INFO_MAGIC, TRAILER_MAGIC) or codec == "NONE":
            body = payload[:uncompressed] if codec == "NONE" else payload
        elif codec == "GZ":
            body = self._gunzip(payload, offset)
        else:
            raise HoodieNotSupportedError(f"{self.where}: HFile blocks compressed with {codec} are not supported "
                                          "(Hudi's metadata table uses none or GZ).")
        if codec != "NONE" and magic not in (FILE_INFO_MAGIC, TRAILER_MAGIC) and len(body) != uncompressed:
            raise self._fail(f"block at byte {offset} inflates to {len(body)} bytes, its header says {uncompressed}")
        return magic, body, end

    def _gunzip(self, payload: bytes, offset: int) -> bytes:
        out = bytearray()
        rest = payload
        try:
            while rest:
                d = zlib.decompressobj(wbits=31)
                out += d.decompress(rest)
                rest = d.unused_data
                if not d.eof:
                    break
        except zlib.error as exc:
            raise self._fail(f"GZ block at byte {offset} does not inflate ({exc})") from exc
        return bytes(out)

    def _read_file_info(self) -> dict[bytes, bytes]:
        magic, body, _ = self._block(self.trailer.file_info_offset)
        if magic != FILE_INFO_MAGIC:
            raise self._fail(f"no file info block at byte {self.trailer.file_info_offset}")
        if self.trailer.codec not in ("NONE",) and body[:4] != PBUF_MAGIC:
            body = self._gunzip(body, self.trailer.file_info_offset) if self.trailer.codec == "GZ" else body
        if body[:4] != PBUF_MAGIC:
            raise self._fail("the file info block is not a protobuf message")
        length, pos = _varint(body, 4)
        info: dict[bytes, bytes] = {}
        for number, entry in _proto_fields(body[pos:pos + length]):
            if number == 1 and isinstance(entry, bytes):
                pair = dict(_proto_fields(entry))
                info[bytes(pair.get(1, b""))] = bytes(pair.get(2, b""))  # type: ignore[arg-type]
        return info

    # ------------------------------------------------------------------ records
    @property
    def schema_json(self) -> str | None:
        raw = self.file_info.get(SCHEMA_KEY)
        return raw.decode("utf-8") if raw else None

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (row key, value) in file order (sorted by key, as HFiles are)."""
        if self.trailer.entry_count == 0:
            return
        with_mvcc = MAX_MEMSTORE_TS_KEY in self.file_info
        offset = self.trailer.first_data_block_offset
        seen = 0
        while offset < self.trailer.load_on_open_offset:
            magic, body, offset = self._block(offset)
            if magic not in DATA_MAGICS:
                continue  # leaf index or bloom blocks between data blocks
            for key, value in self._cells(body, with_mvcc):
                seen += 1
                yield key, value
        if seen != self.trailer.entry_count:
            raise self._fail(f"{seen} cells read, the trailer counts {self.trailer.entry_count}")

    def _cells(self, body: bytes, with_mvcc: bool,
               wanted: Container[bytes] | None = None) -> Iterator[tuple[bytes, bytes]]:
        """The (row, value) cells of a data block body; only rows in ``wanted`` when given.

        A point lookup walks every cell of each block its keys can be in (cells have no
        offsets to bisect), so the walk is one header unpack per cell and a cell that is
        not wanted costs no slice of its value and no generator step (a 100k-key record-index
        lookup walks ~1M cells)."""
        pos, end = 0, len(body)
        header = _CELL_HEADER.unpack_from
        try:
            while pos < end:
                key_len, value_len, row_len = header(body, pos)
                row_at = pos + 10
                value_at = pos + 8 + key_len
                pos = value_at + value_len
                if key_len < 2 or value_len < 0 or pos > end:
                    raise self._fail("a cell runs past its data block")
                row = body[row_at:row_at + row_len]
                if wanted is None or row in wanted:
                    yield row, body[value_at:pos]
                if with_mvcc:
                    first = body[pos]
                    if first < 0x80 or first >= 0x90:  # a one-byte vlong (signed >= -112): Hudi writes 0
                        pos += 1
                    else:
                        _, pos = _hadoop_vlong(body, pos)
        except (struct.error, IndexError) as exc:  # a header or memstore timestamp past the end
            raise self._fail("a cell header runs past its data block") from exc
