"""Hudi's record-key bloom filters, bit for bit as Hudi writes them into base file footers.

Every base file Hudi writes carries a bloom filter over its record keys in the parquet footer
(``org.apache.hudi.bloomfilter``); the bloom index probes it to decide which files an
incoming key may live in. For those footers to be usable by real Hudi (and for us to use
Hudi's), the filter must match Hudi exactly:

* sizing: ``bits = ceil(n * -ln(fpp) / ln(2)^2)``, ``hashes = ceil(ln(2) * bits / n)``;
* hashing: Hadoop's MurmurHash (hash type 1) over the key's UTF-8 bytes, chained — the i-th
  position is ``abs(h_i % bits)`` with ``h_i = murmur(key, seed=h_{i-1})`` and ``h_-1 = 0``.
  Hadoop's variant mixes the 1-3 tail bytes in a non-standard order and sign-extends them,
  which we reproduce;
* serialization: Hadoop ``Writable`` layout (big-endian ints): version ``-1``, ``nbHash``,
  hash type (1 byte), vector size, then the bit vector as ``ceil(bits/8)`` bytes with bit
  ``i`` at ``byte[i // 8] & (1 << (i % 8))``. The dynamic filter (``DYNAMIC_V0``) writes that
  header, then ``nr``, ``currentNbRecord``, the number of rows, and each row as a plain
  bloom filter. The footer value is the standard Base64 of those bytes.

Hashing is vectorized with numpy: keys are grouped by their number of 4-byte blocks, the
seed-independent per-block mixing is done once, and the 30-odd chained seeds then cost a
handful of array operations per block, so a million keys take about a second, not minutes.
"""

from __future__ import annotations

import base64
import math
import struct
from typing import Any, Mapping, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.config import ConfigKey, HoodieConfig, register
from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieKeyError, HoodieNotSupportedError

__all__ = [
    "BLOOM_FILTER_KEY",
    "OLD_BLOOM_FILTER_KEY",
    "BLOOM_FILTER_TYPE_KEY",
    "MIN_KEY",
    "MAX_KEY",
    "SIMPLE",
    "DYNAMIC_V0",
    "MURMUR_HASH",
    "BloomFilter",
    "SimpleBloomFilter",
    "DynamicBloomFilter",
    "create_bloom_filter",
    "bloom_filter_from_config",
    "load_bloom_filter",
    "bloom_filter_from_footer",
    "footer_metadata",
    "build_footer",
    "min_max_record_keys",
    "optimal_num_bits",
    "optimal_num_hashes",
    "murmur_hash",
    "hash_positions",
]

# Parquet footer keys (HoodieAvroWriteSupport / HoodieBloomFilterWriteSupport).
BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"
OLD_BLOOM_FILTER_KEY = "com.uber.hoodie.bloomfilter"
BLOOM_FILTER_TYPE_KEY = "hoodie_bloom_filter_type_code"
MIN_KEY = "hoodie_min_record_key"
MAX_KEY = "hoodie_max_record_key"

# BloomFilterTypeCode names.
SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"

# org.apache.hadoop.util.hash.Hash type codes.
JENKINS_HASH = 0
MURMUR_HASH = 1

_WRITABLE_VERSION = -1
_M = np.uint32(0x5BD1E995)
_M_INT = 0x5BD1E995
_MASK32 = 0xFFFFFFFF
# Keys hashed per numpy pass: big enough to amortize call overhead, small enough that the
# (chunk x nbHash) position matrix stays in cache-friendly territory.
_CHUNK = 1 << 16

NUM_ENTRIES = ConfigKey(
    "hoodie.index.bloom.num_entries",
    "60000",
    "Expected number of record keys per base file; sizes the bloom filter (and, for DYNAMIC_V0, one row).",
)
FPP = ConfigKey(
    "hoodie.index.bloom.fpp",
    "0.000000001",
    "Target false-positive probability of the bloom filter at num_entries keys.",
)
FILTER_TYPE = ConfigKey(
    "hoodie.bloom.index.filter.type",
    DYNAMIC_V0,
    "Bloom filter type written into base files: SIMPLE or DYNAMIC_V0.",
)
DYNAMIC_MAX_ENTRIES = ConfigKey(
    "hoodie.bloom.index.filter.dynamic.max.entries",
    "100000",
    "Upper bound of keys a DYNAMIC_V0 filter grows to; past it rows are reused round-robin.",
)
register(NUM_ENTRIES, FPP, FILTER_TYPE, DYNAMIC_MAX_ENTRIES)

KeysLike = Union[pa.Array, pa.ChunkedArray, Sequence[str], np.ndarray]


# --------------------------------------------------------------------------------------
# Sizing (BloomFilterUtils)
# --------------------------------------------------------------------------------------

_LOG2 = math.log(2)
_LOG2_SQUARED = _LOG2 * _LOG2


def _java_int(value: float) -> int:
    """Java's ``(int)`` cast of a double: truncate toward zero, saturate at the int range."""
    if math.isnan(value):
        return 0
    return max(-(2**31), min(2**31 - 1, int(value)))


def optimal_num_bits(num_entries: int, fpp: float) -> int:
    """Bit-vector size Hudi picks for ``num_entries`` keys at false-positive rate ``fpp``."""
    return _java_int(math.ceil(num_entries * (-math.log(fpp) / _LOG2_SQUARED)))


def optimal_num_hashes(num_bits: int, num_entries: int) -> int:
    """Number of hash functions Hudi picks for a vector of ``num_bits`` bits."""
    return _java_int(math.ceil(_LOG2 * num_bits / num_entries))


# --------------------------------------------------------------------------------------
# Hadoop MurmurHash, scalar and vectorized
# --------------------------------------------------------------------------------------


def _sext8(b: int) -> int:
    return b - 256 if b >= 128 else b


def murmur_hash(data: bytes, seed: int = 0) -> int:
    """Hadoop's ``MurmurHash.hash(data, length, seed)`` as a signed 32-bit int.

    Scalar reference used for single keys and to cross-check the vectorized path.
    """
    length = len(data)
    h = (seed ^ length) & _MASK32
    nblocks = length >> 2
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _M_INT) & _MASK32
        k ^= k >> 24
        k = (k * _M_INT) & _MASK32
        h = (h * _M_INT) & _MASK32
        h ^= k
    left = length & 3
    if left:
        # Hadoop's tail: data[len-3] << 16, data[len-2] << 8, data[len-1] (sign-extended bytes).
        if left >= 3:
            h ^= (_sext8(data[length - 3]) << 16) & _MASK32
        if left >= 2:
            h ^= (_sext8(data[length - 2]) << 8) & _MASK32
        h ^= _sext8(data[length - 1]) & _MASK32
        h = (h * _M_INT) & _MASK32
    h ^= h >> 13
    h = (h * _M_INT) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h >= (1 << 31) else h


def _positions_scalar(data: bytes, nb_hash: int, vector_size: int) -> list[int]:
    if not data:
        raise HoodieKeyError("A bloom filter key must not be empty (Hudi rejects zero-length keys).")
    out = []
    h = 0
    for _ in range(nb_hash):
        h = murmur_hash(data, h)
        out.append(abs(h) % vector_size)
    return out


def _as_string_array(keys: KeysLike) -> pa.Array:
    """Normalize keys to one contiguous arrow (large_)string/binary array."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    elif not isinstance(keys, pa.Array):
        if isinstance(keys, np.ndarray):
            keys = keys.tolist()
        keys = pa.array(keys, type=pa.string())
    t = keys.type
    if pa.types.is_dictionary(t):
        keys = keys.dictionary_decode()
        t = keys.type
    if getattr(pa.types, "is_string_view", lambda _t: False)(t):
        keys = keys.cast(pa.large_string())
        t = keys.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        raise HoodieKeyError(f"Bloom filter keys must be strings, got arrow type {t}.")
    if keys.null_count:
        raise HoodieKeyError(
            f"{keys.null_count} record key(s) are null; every record needs a non-null record key "
            "before it can go into a bloom filter."
        )
    return keys


def _buffers(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(data bytes as uint8, offsets as int64 of length n+1) without copying the data."""
    bufs = keys.buffers()
    large = pa.types.is_large_string(keys.type) or pa.types.is_large_binary(keys.type)
    off_dtype = np.int64 if large else np.int32
    n = len(keys)
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=keys.offset + n + 1)[keys.offset :].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return data, offsets


def _hash_group(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, nblocks: int, nb_hash: int, vector_size: int
) -> np.ndarray:
    """Positions (n x nb_hash, uint32) for keys that all have ``nblocks`` whole 4-byte blocks."""
    n = len(starts)
    m = _M
    with np.errstate(over="ignore"):
        if nblocks:
            idx = starts[:, None] + np.arange(4 * nblocks, dtype=np.int64)[None, :]
            words = np.ascontiguousarray(data[idx]).view("<u4").reshape(n, nblocks)
            k = words * m
            k ^= k >> np.uint32(24)
            k *= m
            kt = np.ascontiguousarray(k.T)  # (nblocks, n): one contiguous row per block
        else:
            kt = np.empty((0, n), dtype=np.uint32)
        # Tail: Hadoop mixes data[len-3] << 16 ^ data[len-2] << 8 ^ data[len-1], sign-extended.
        left = lengths & 3
        ends = starts + lengths
        sdata = data.view(np.int8)
        tail = np.zeros(n, dtype=np.int32)
        for back, shift in ((3, 16), (2, 8), (1, 0)):
            sel = left >= back
            if sel.any():
                pos = np.where(sel, ends - back, 0)
                vals = sdata[pos].astype(np.int32) << np.int32(shift)
                tail ^= np.where(sel, vals, np.int32(0))
        tail_u = tail.view(np.uint32)
        has_tail = left != 0
        all_tail = bool(has_tail.all())
        any_tail = bool(has_tail.any())
        len_u = lengths.astype(np.uint32)

        out = np.empty((nb_hash, n), dtype=np.uint32)  # one contiguous row per hash, transposed at the end
        vs = np.uint32(vector_size)
        h = np.zeros(n, dtype=np.uint32)
        for i in range(nb_hash):
            h ^= len_u  # the previous hash is the next seed
            for j in range(nblocks):
                h *= m
                h ^= kt[j]
            if any_tail:
                h ^= tail_u
                if all_tail:
                    h *= m
                else:
                    h = np.where(has_tail, h * m, h)
            h ^= h >> np.uint32(13)
            h *= m
            h ^= h >> np.uint32(15)
            # Java: Math.abs(h % size) == |h| mod size. np.abs wraps MIN_VALUE to itself, which
            # read as uint32 is exactly 2^31, so the uint32 view is the true magnitude.
            np.remainder(np.abs(h.view(np.int32)).view(np.uint32), vs, out=out[i])
    return out.T


def hash_positions(keys: KeysLike, nb_hash: int, vector_size: int) -> np.ndarray:
    """Bit positions (``len(keys) x nb_hash``, uint32) Hudi's HashFunction gives each key.

    Row ``r`` holds the positions for ``keys[r]`` (input order is preserved).
    """
    arr = _as_string_array(keys)
    n = len(arr)
    out = np.empty((n, nb_hash), dtype=np.uint32)
    if n == 0:
        return out
    data, offsets = _buffers(arr)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if (lengths == 0).any():
        raise HoodieKeyError(
            f"{int((lengths == 0).sum())} record key(s) are empty; Hudi cannot put a zero-length key "
            "into a bloom filter. Fix the record key field(s) so every record has a value."
        )
    nblocks = lengths >> 2
    order = np.argsort(nblocks, kind="stable")
    sorted_blocks = nblocks[order]
    bounds = np.flatnonzero(np.diff(sorted_blocks)) + 1
    group_starts = np.concatenate(([0], bounds))
    group_ends = np.concatenate((bounds, [n]))
    for gs, ge in zip(group_starts.tolist(), group_ends.tolist()):
        nb = int(sorted_blocks[gs])
        for cs in range(gs, ge, _CHUNK):
            sel = order[cs : min(ge, cs + _CHUNK)]
            out[sel] = _hash_group(data, starts[sel], lengths[sel], nb, nb_hash, vector_size)
    return out


# --------------------------------------------------------------------------------------
# Filters
# --------------------------------------------------------------------------------------


def _key_bytes(key: str | bytes) -> bytes:
    if key is None:
        raise HoodieKeyError("A record key is null; every record needs a non-null record key.")
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


class _BitRow:
    """One Hadoop ``BloomFilter``: header fields plus a bit vector (one bool per bit)."""

    __slots__ = ("vector_size", "nb_hash", "hash_type", "bits")

    def __init__(self, vector_size: int, nb_hash: int, hash_type: int = MURMUR_HASH, bits: np.ndarray | None = None):
        if vector_size <= 0:
            raise HoodieKeyError(f"Bloom filter vector size must be > 0, got {vector_size}.")
        if nb_hash <= 0:
            raise HoodieKeyError(f"Bloom filter hash count must be > 0, got {nb_hash}.")
        if hash_type != MURMUR_HASH:
            raise HoodieNotSupportedError(
                f"Bloom filter hash type {hash_type} is not supported (only Murmur, type {MURMUR_HASH}, "
                "which every Hudi release writes)."
            )
        self.vector_size = vector_size
        self.nb_hash = nb_hash
        self.hash_type = hash_type
        self.bits = bits if bits is not None else np.zeros(vector_size, dtype=np.bool_)

    def header(self) -> bytes:
        return struct.pack(">iibi", _WRITABLE_VERSION, self.nb_hash, self.hash_type, self.vector_size)

    def to_bytes(self) -> bytes:
        return self.header() + np.packbits(self.bits, bitorder="little").tobytes()

    def contains_positions(self, positions: np.ndarray) -> np.ndarray:
        return self.bits[positions].all(axis=1)

    @staticmethod
    def read(buf: memoryview, pos: int) -> tuple["_BitRow", int]:
        nb_hash, hash_type, vector_size, pos = _read_header(buf, pos)
        nbytes = (vector_size + 7) // 8
        if pos + nbytes > len(buf):
            raise HoodieCorruptedDataError(
                f"Bloom filter is truncated: needs {nbytes} bytes of bit vector, {len(buf) - pos} left."
            )
        raw = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=pos)
        bits = np.unpackbits(raw, bitorder="little", count=vector_size).astype(np.bool_)
        return _BitRow(vector_size, nb_hash, hash_type, bits), pos + nbytes


def _read_header(buf: memoryview, pos: int) -> tuple[int, int, int, int]:
    if pos + 4 > len(buf):
        raise HoodieCorruptedDataError("Bloom filter is truncated (no header).")
    (ver,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if ver > 0:  # pre-versioned Hadoop format: the first int is nbHash, hashing is Jenkins
        nb_hash, hash_type = ver, JENKINS_HASH
    elif ver == _WRITABLE_VERSION:
        nb_hash, hash_type = struct.unpack_from(">ib", buf, pos)
        pos += 5
    else:
        raise HoodieCorruptedDataError(f"Unsupported bloom filter serialization version {ver}.")
    (vector_size,) = struct.unpack_from(">i", buf, pos)
    return nb_hash, hash_type, vector_size, pos + 4


class BloomFilter:
    """Common surface of Hudi's bloom filters (``org.apache.hudi.common.bloom.BloomFilter``)."""

    type_code: str = ""
    nb_hash: int
    vector_size: int

    def add(self, key: str | bytes) -> None:
        """Add one key (a record key string; hashed as its UTF-8 bytes)."""
        raise NotImplementedError

    def add_many(self, keys: KeysLike) -> None:
        """Add keys in order, exactly as adding them one by one would (vectorized)."""
        raise NotImplementedError

    def might_contain(self, key: str | bytes) -> bool:
        raise NotImplementedError

    def might_contain_many(self, keys: KeysLike) -> np.ndarray:
        """Boolean numpy array: False means the key is certainly not in the file."""
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """Hadoop ``Writable`` bytes of the filter."""
        raise NotImplementedError

    def serialize(self) -> str:
        """The footer string: Base64 of :meth:`to_bytes` (``BloomFilter.serializeToString``)."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BloomFilter) and self.type_code == other.type_code and self.to_bytes() == other.to_bytes()

    __hash__ = None  # type: ignore[assignment]


class SimpleBloomFilter(BloomFilter):
    """``SIMPLE``: one Hadoop bloom filter sized for ``num_entries`` at ``fpp``."""

    type_code = SIMPLE

    def __init__(self, num_entries: int = 60000, fpp: float = 0.000000001, *, _row: _BitRow | None = None):
        if _row is None:
            if num_entries <= 0:
                raise HoodieKeyError(f"hoodie.index.bloom.num_entries must be > 0, got {num_entries}.")
            bits = optimal_num_bits(num_entries, fpp)
            _row = _BitRow(bits, optimal_num_hashes(bits, num_entries))
        self._row = _row

    @property
    def nb_hash(self) -> int:  # type: ignore[override]
        return self._row.nb_hash

    @property
    def vector_size(self) -> int:  # type: ignore[override]
        return self._row.vector_size

    def add(self, key: str | bytes) -> None:
        self._row.bits[_positions_scalar(_key_bytes(key), self.nb_hash, self.vector_size)] = True

    def add_many(self, keys: KeysLike) -> None:
        pos = hash_positions(keys, self.nb_hash, self.vector_size)
        self._row.bits[pos.ravel()] = True

    def might_contain(self, key: str | bytes) -> bool:
        return bool(self._row.bits[_positions_scalar(_key_bytes(key), self.nb_hash, self.vector_size)].all())

    def might_contain_many(self, keys: KeysLike) -> np.ndarray:
        return self._row.contains_positions(hash_positions(keys, self.nb_hash, self.vector_size))

    def to_bytes(self) -> bytes:
        return self._row.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "SimpleBloomFilter":
        buf = memoryview(data)
        row, _ = _BitRow.read(buf, 0)
        return cls(_row=row)


class DynamicBloomFilter(BloomFilter):
    """``DYNAMIC_V0`` (``HoodieDynamicBoundedBloomFilter``): rows of ``num_entries`` keys each.

    A new row is started each time the active row has taken ``num_entries`` keys, until
    ``rows * num_entries >= max_entries``; from then on keys go to the rows round-robin
    (the first overflow key to row 0, then rows 0, 1, 2, ... cyclically), as Hudi does.
    The round-robin cursor and ``max_entries`` are not serialized by Hudi, so a filter read
    back from a footer keeps accepting keys the way Hudi's deserialized filter would.
    """

    type_code = DYNAMIC_V0

    def __init__(
        self,
        num_entries: int = 60000,
        fpp: float = 0.000000001,
        max_entries: int = 100000,
        *,
        _state: tuple[int, int, int, int, int, list[_BitRow]] | None = None,
    ):
        if _state is None:
            if num_entries <= 0:
                raise HoodieKeyError(f"hoodie.index.bloom.num_entries must be > 0, got {num_entries}.")
            bits = optimal_num_bits(num_entries, fpp)
            hashes = optimal_num_hashes(bits, num_entries)
            _state = (bits, hashes, MURMUR_HASH, num_entries, 0, [_BitRow(bits, hashes)])
            self.max_entries = max_entries
        else:
            self.max_entries = 0  # not part of the serialized form (Hudi's readFields leaves it 0)
        self.vector_size, self._nb_hash, self.hash_type, self.nr, self.current_nb_record, self.rows = _state
        self._reached_max = False
        self._cursor = 0

    @property
    def nb_hash(self) -> int:  # type: ignore[override]
        return self._nb_hash

    def _new_row(self) -> _BitRow:
        return _BitRow(self.vector_size, self._nb_hash, self.hash_type)

    def _assign_rows(self, n: int) -> list[tuple[int, slice]]:
        """Which row each of the next ``n`` keys goes to, advancing the state like n ``add`` calls.

        Returned as (row, slice of key positions) pairs: contiguous runs while rows are being
        filled, strided slices once the bound is reached and rows are used round-robin.
        """
        out: list[tuple[int, slice]] = []
        i = 0
        while i < n:
            if self._reached_max:
                nrows = len(self.rows)
                for r in range(nrows):
                    first = i + (r - self._cursor) % nrows
                    if first < n:
                        out.append((r, slice(first, n, nrows)))
                self._cursor += n - i
                self.current_nb_record += n - i
                break
            if self.current_nb_record >= self.nr:
                if len(self.rows) * self.nr < self.max_entries:
                    self.rows.append(self._new_row())
                    self.current_nb_record = 0
                    continue
                self._reached_max = True
                out.append((0, slice(i, i + 1)))  # the key hitting the bound goes to row 0; cursor stays
                self.current_nb_record += 1
                i += 1
                continue
            take = min(n - i, self.nr - self.current_nb_record)
            out.append((len(self.rows) - 1, slice(i, i + take)))
            self.current_nb_record += take
            i += take
        return out

    def add(self, key: str | bytes) -> None:
        pos = _positions_scalar(_key_bytes(key), self._nb_hash, self.vector_size)
        for row, _ in self._assign_rows(1):
            self.rows[row].bits[pos] = True

    def add_many(self, keys: KeysLike) -> None:
        pos = hash_positions(keys, self._nb_hash, self.vector_size)
        for row, part in self._assign_rows(len(pos)):
            self.rows[row].bits[pos[part].ravel()] = True

    def might_contain(self, key: str | bytes) -> bool:
        pos = _positions_scalar(_key_bytes(key), self._nb_hash, self.vector_size)
        return any(bool(row.bits[pos].all()) for row in self.rows)

    def might_contain_many(self, keys: KeysLike) -> np.ndarray:
        pos = hash_positions(keys, self._nb_hash, self.vector_size)
        result = np.zeros(len(pos), dtype=np.bool_)
        for row in self.rows:
            result |= row.contains_positions(pos)
        return result

    def to_bytes(self) -> bytes:
        head = struct.pack(
            ">iibiiii",
            _WRITABLE_VERSION,
            self._nb_hash,
            self.hash_type,
            self.vector_size,
            self.nr,
            self.current_nb_record,
            len(self.rows),
        )
        return head + b"".join(row.to_bytes() for row in self.rows)

    @classmethod
    def from_bytes(cls, data: bytes) -> "DynamicBloomFilter":
        buf = memoryview(data)
        nb_hash, hash_type, vector_size, pos = _read_header(buf, 0)
        if pos + 12 > len(buf):
            raise HoodieCorruptedDataError("Dynamic bloom filter is truncated (no row header).")
        nr, current, nrows = struct.unpack_from(">iii", buf, pos)
        pos += 12
        rows = []
        for _ in range(nrows):
            row, pos = _BitRow.read(buf, pos)
            rows.append(row)
        if hash_type != MURMUR_HASH:
            raise HoodieNotSupportedError(f"Bloom filter hash type {hash_type} is not supported (only Murmur).")
        return cls(_state=(vector_size, nb_hash, hash_type, nr, current, rows))


# --------------------------------------------------------------------------------------
# Factory, config and footers
# --------------------------------------------------------------------------------------


def create_bloom_filter(
    num_entries: int = 60000, fpp: float = 0.000000001, type_code: str = DYNAMIC_V0, max_entries: int = 100000
) -> BloomFilter:
    """``BloomFilterFactory.createBloomFilter`` (type code compared case-insensitively)."""
    code = (type_code or "").upper()
    if code == SIMPLE:
        return SimpleBloomFilter(num_entries, fpp)
    if code == DYNAMIC_V0:
        return DynamicBloomFilter(num_entries, fpp, max_entries)
    raise HoodieNotSupportedError(
        f"Bloom filter type code {type_code!r} is not recognized; use SIMPLE or DYNAMIC_V0 "
        "(hoodie.bloom.index.filter.type)."
    )


def bloom_filter_from_config(props: Mapping[str, str] | HoodieConfig | None = None) -> BloomFilter:
    """A fresh, empty filter as configured by the write config (Hudi's defaults otherwise)."""
    cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props or {})
    return create_bloom_filter(
        cfg.get_int(NUM_ENTRIES.key),
        cfg.get_float(FPP.key),
        cfg.get(FILTER_TYPE.key) or DYNAMIC_V0,
        cfg.get_int(DYNAMIC_MAX_ENTRIES.key),
    )


def load_bloom_filter(serialized: str | bytes, type_code: str | bytes | None = SIMPLE) -> BloomFilter:
    """``BloomFilterFactory.fromString``: decode a footer value (Base64) of the given type."""
    if isinstance(type_code, bytes):
        type_code = type_code.decode("utf-8")
    try:
        raw = base64.b64decode(serialized, validate=True)
    except (ValueError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"Bloom filter footer is not valid Base64: {exc}") from None
    code = (type_code or SIMPLE).upper()
    try:
        if code == SIMPLE:
            return SimpleBloomFilter.from_bytes(raw)
        if code == DYNAMIC_V0:
            return DynamicBloomFilter.from_bytes(raw)
    except struct.error as exc:
        raise HoodieCorruptedDataError(f"Bloom filter footer is truncated or corrupt: {exc}") from None
    raise HoodieNotSupportedError(f"Bloom filter type code {type_code!r} is not recognized (SIMPLE or DYNAMIC_V0).")


def _get_meta(meta: Mapping[Any, Any], key: str) -> str | None:
    val = meta.get(key)
    if val is None:
        val = meta.get(key.encode("utf-8"))
    if isinstance(val, bytes):
        val = val.decode("utf-8")
    return val


def bloom_filter_from_footer(metadata: Mapping[Any, Any] | None) -> BloomFilter | None:
    """The filter stored in a parquet footer's key-value metadata (str or bytes keys), or None.

    Reads the current key and falls back to the pre-Apache ``com.uber.hoodie.bloomfilter``;
    a missing type code means SIMPLE, as in Hudi.
    """
    if not metadata:
        return None
    value = _get_meta(metadata, BLOOM_FILTER_KEY) or _get_meta(metadata, OLD_BLOOM_FILTER_KEY)
    if value is None:
        return None
    return load_bloom_filter(value, _get_meta(metadata, BLOOM_FILTER_TYPE_KEY) or SIMPLE)


def footer_metadata(bloom: BloomFilter | None, min_key: str | None, max_key: str | None) -> dict[str, str]:
    """Footer entries Hudi's write support adds: filter, type code (dynamic only), min/max key."""
    meta: dict[str, str] = {}
    if bloom is not None:
        meta[BLOOM_FILTER_KEY] = bloom.serialize()
        if "DYNAMIC" in bloom.type_code:
            meta[BLOOM_FILTER_TYPE_KEY] = bloom.type_code
    if min_key is not None and max_key is not None:
        meta[MIN_KEY] = min_key
        meta[MAX_KEY] = max_key
    return meta


def build_footer(keys: KeysLike, props: Mapping[str, str] | HoodieConfig | None = None) -> dict[str, str]:
    """Everything Hudi's writer puts in a base file footer for these record keys, in write order.

    Filter built from the config (``hoodie.bloom.index.filter.type`` etc.), type code only for
    dynamic filters, min/max key in Java string order. Empty ``keys`` -> filter only, as Hudi.
    """
    bloom = bloom_filter_from_config(props)
    bloom.add_many(keys)
    lo, hi = min_max_record_keys(keys)
    return footer_metadata(bloom, lo, hi)


def min_max_record_keys(keys: KeysLike) -> tuple[str | None, str | None]:
    """Min and max record key in Java ``String.compareTo`` order (what Hudi's Avro writer uses).

    That order is UTF-16 code-unit order; it equals byte order of the UTF-8 bytes unless keys
    mix supplementary characters with U+E000..U+FFFF, in which case we sort by UTF-16.
    """
    arr = _as_string_array(keys)
    if len(arr) == 0:
        return None, None
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_string())
    data, offsets = _buffers(arr)
    used = data[offsets[0] : offsets[-1]]
    if used.size and (used >= 0xEE).any() and (used >= 0xF0).any():
        values = arr.to_pylist()
        java_order = lambda v: v.encode("utf-16-be")  # noqa: E731
        return min(values, key=java_order), max(values, key=java_order)
    mm = pc.min_max(arr)
    return mm["min"].as_py(), mm["max"].as_py()
