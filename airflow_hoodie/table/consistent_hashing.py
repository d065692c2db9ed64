"""Hudi's consistent-hashing bucket index, as format facts: the hash ring of a partition, its
``.hashing_meta`` files and ``.commit`` markers, and which node a record key hashes to.

A partition's layout lives in ``.hoodie/.bucket_index/consistent_hashing_metadata/<partition>/``
(Hudi's ``HoodieConsistentHashingMetadata``): ``<instant>.hashing_meta`` JSON files, the first
one at ``00000000000000`` (the default ring a writer creates on a partition's first write),
each later one written by a resize clustering (a replacecommit) with ``seqNo + 1``, and an empty
``<instant>.commit`` marker once that replacecommit completed. A node's ``value`` is the upper
end of its hash range; a record goes to the first node whose value is ``>=`` its hash (wrapping
to the first node), hash = ``xxhash32(utf8(String.join("", hashKeys)), 0) & Integer.MAX_VALUE``
(``ConsistentBucketIdentifier``), and its file group is ``fileIdPrefix + "-0"``. The default
ring's file id prefixes are name-based UUIDs of (range start, range end, partition), so every
writer creating a partition's ring creates the same one: no lock is needed for it.

Writers of any engine must agree on every bit of this, so the JSON is written as Jackson's
default pretty printer writes it, and xxhash32 is computed exactly (the spec's algorithm over
unsigned 32-bit arithmetic).
"""

from __future__ import annotations

import hashlib
import json
import struct
import uuid
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.table.bucket_index import hash_keys

#: hash values are masked to 31 bits (``HoodieConsistentHashingMetadata.HASH_VALUE_MASK``)
HASH_VALUE_MASK = 0x7FFFFFFF
HASHING_META_FOLDER = ".hoodie/.bucket_index/consistent_hashing_metadata"
HASHING_META_SUFFIX = ".hashing_meta"
COMMIT_MARKER_SUFFIX = ".commit"
INIT_INSTANT = "00000000000000"
NORMAL, REPLACE, DELETE = "NORMAL", "REPLACE", "DELETE"
#: keys of a resize clustering group's extraMetadata (BaseConsistentHashingBucketClusteringPlanStrategy)
META_PARTITION_KEY = "clustering.group.partition"
META_CHILD_NODE_KEY = "clustering.group.child.node"
META_SEQUENCE_NUMBER_KEY = "clustering.group.sequence.no"

_M32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M32, 13) * _P1) & _M32


def xxhash32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (unsigned), as lz4-java's ``XXHash32.hash`` computes it (which Hudi's
    ``HashID.getXXHash32`` returns as a signed int: the bits are the same)."""
    n, i = len(data), 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        limit = n - 16
        while i <= limit:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + struct.unpack_from("<I", data, i)[0] * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def key_hash(record_key: str, fields: Sequence[str], parser: str) -> int:
    """The ring position of a record key: ``xxhash32(String.join("", hashKeys)) & MAX_INT``
    (a null hash value joins as Java's ``"null"``)."""
    joined = "".join("null" if v is None else v for v in hash_keys(record_key, fields, parser))
    return xxhash32(joined.encode("utf-8")) & HASH_VALUE_MASK


def _rotl_np(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _words(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each byte offset ``at`` of ``data`` (gathered bytewise:
    offsets are not 4-aligned)."""
    return (data[at].astype(np.uint32) | (data[at + 1].astype(np.uint32) << np.uint32(8))
            | (data[at + 2].astype(np.uint32) << np.uint32(16)) | (data[at + 3].astype(np.uint32) << np.uint32(24)))


def xxhash32_batch(values: pa.Array | pa.ChunkedArray, seed: int = 0) -> np.ndarray:
    """:func:`xxhash32` of every value's UTF-8 bytes (uint32), in numpy: the algorithm runs once
    over all values, step by step (16-byte stripes, then 4-byte words, then bytes), each step
    on the values long enough for it, so the Python work follows the longest value, not the
    number of values. uint32 arrays wrap as the spec's arithmetic does. No nulls."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.large_binary())
    if values.null_count:
        raise ValueError("xxhash32_batch hashes no nulls")
    n_values = len(values)
    bufs = values.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, n_values + 1, values.offset * 8)
    start, end = offsets[:-1], offsets[1:]
    # padded so the last word reads past no buffer end (the lanes that read it are masked)
    raw = np.frombuffer(bufs[2], np.uint8, int(offsets[-1])) if bufs[2] is not None and offsets[-1] else \
        np.zeros(0, np.uint8)
    data = np.concatenate([raw, np.zeros(16, np.uint8)])
    length = (end - start).astype(np.int64)
    p1, p2, p3, p4, p5 = (np.uint32(p) for p in (_P1, _P2, _P3, _P4, _P5))
    s = np.uint32(seed & _M32)
    stripes = length // 16
    h = np.full(n_values, (seed + _P5) & _M32, np.uint32)
    long_ = np.flatnonzero(stripes > 0)
    if len(long_):
        v1 = np.full(len(long_), (seed + _P1 + _P2) & _M32, np.uint32)
        v2 = np.full(len(long_), (seed + _P2) & _M32, np.uint32)
        v3 = np.full(len(long_), s, np.uint32)
        v4 = np.full(len(long_), (seed - _P1) & _M32, np.uint32)
        ls, lstart = stripes[long_], start[long_]
        for k in range(int(ls.max())):
            act = np.flatnonzero(ls > k)
            at = lstart[act] + 16 * k
            for v, o in ((v1, 0), (v2, 4), (v3, 8), (v4, 12)):
                v[act] = _rotl_np(v[act] + _words(data, at + o) * p2, 13) * p1
        h[long_] = _rotl_np(v1, 1) + _rotl_np(v2, 7) + _rotl_np(v3, 12) + _rotl_np(v4, 18)
    h += length.astype(np.uint32)
    pos = start + stripes * 16
    rest = length - stripes * 16
    for k in range(3):  # at most three 4-byte words after the stripes
        act = np.flatnonzero(rest >= 4 * (k + 1))
        if not len(act):
            break
        h[act] = _rotl_np(h[act] + _words(data, pos[act] + 4 * k) * p3, 17) * p4
    pos = pos + (rest // 4) * 4
    rest = rest % 4
    for k in range(3):  # at most three tail bytes
        act = np.flatnonzero(rest > k)
        if not len(act):
            break
        h[act] = _rotl_np(h[act] + data[pos[act] + k].astype(np.uint32) * p5, 11) * p1
    h ^= h >> np.uint32(15)
    h *= p2
    h ^= h >> np.uint32(13)
    h *= p3
    h ^= h >> np.uint32(16)
    return h


def key_hashes(keys: pa.Array | pa.ChunkedArray, fields: Sequence[str], parser: str) -> np.ndarray:
    """:func:`key_hash` of every record key (int64). A key that is one hash value (no ``:``;
    with the ``scan`` parser, also none without ``,``) joins to itself and is hashed in one
    numpy pass; complex keys go through :func:`key_hash` one by one."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    keys = keys.cast(pa.string())
    if keys.null_count:
        raise ValueError("record keys of a bucket-index write are never null")
    one_value = pc.invert(pc.match_substring(keys, ":"))
    if parser == "scan":
        one_value = pc.or_(one_value, pc.invert(pc.match_substring(keys, ",")))
    fast = one_value.to_numpy(zero_copy_only=False)
    out = np.empty(len(keys), np.int64)
    if fast.all():
        return (xxhash32_batch(keys) & np.uint32(HASH_VALUE_MASK)).astype(np.int64)
    if fast.any():
        out[fast] = xxhash32_batch(keys.filter(pa.array(fast))) & np.uint32(HASH_VALUE_MASK)
    slow = np.flatnonzero(~fast)
    out[slow] = [key_hash(k, fields, parser) for k in keys.take(pa.array(slow)).to_pylist()]
    return out


@dataclass(frozen=True)
class HashingNode:
    """One node of the ring (``ConsistentHashingNode``): the upper end of its hash range, its
    file group's id prefix (None on a DELETE child), and its tag (children of a pending resize
    are REPLACE or DELETE; a committed ring's nodes are NORMAL)."""

    value: int
    file_id_prefix: str | None
    tag: str = NORMAL

    @property
    def file_id(self) -> str:
        """``FSUtils.createNewFileId(prefix, 0)``: a bucket has one file group."""
        return f"{self.file_id_prefix}-0"

    def to_json(self) -> dict[str, object]:
        return {"value": self.value, "fileIdPrefix": self.file_id_prefix, "tag": self.tag}

    @classmethod
    def from_json(cls, d: dict[str, object]) -> HashingNode:
        return cls(int(d["value"]), d.get("fileIdPrefix"), str(d.get("tag") or NORMAL))  # type: ignore[arg-type]


def default_file_id_prefix(partition: str, start: int, end: int) -> str:
    """``UUID.nameUUIDFromBytes(long start BE + long end BE + utf8(partition))``: an MD5
    name-based (version 3) UUID, the same for every writer."""
    digest = bytearray(hashlib.md5(struct.pack(">qq", start, end) + partition.encode("utf-8")).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


def default_nodes(partition: str, num_buckets: int) -> list[HashingNode]:
    """The ring of a partition's first write: ``num_buckets`` equal ranges of [0, MAX_INT]
    (``step = ceil(MAX_INT / n)``, the last one clipped at MAX_INT)."""
    step = (HASH_VALUE_MASK + num_buckets - 1) // num_buckets
    nodes, start = [], 0
    for i in range(1, num_buckets + 1):
        end = min(step * i, HASH_VALUE_MASK)
        nodes.append(HashingNode(end, default_file_id_prefix(partition, start, end)))
        start = end
    return nodes


def _java_pretty(value: object, indent: int = 0) -> str:
    """Jackson's DefaultPrettyPrinter: ``"k" : v``, objects indented by two, arrays inline
    (``[ {`` ... ``}, {`` ... ``} ]``)."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        items = [f'{pad}  {json.dumps(k)} : {_java_pretty(v, indent + 1)}' for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_java_pretty(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def nodes_json(nodes: Sequence[HashingNode]) -> str:
    """``ConsistentHashingNode.toJsonString``: a clustering group's child nodes."""
    return _java_pretty([n.to_json() for n in nodes])


def nodes_from_json(text: str | None) -> list[HashingNode]:
    return [HashingNode.from_json(d) for d in json.loads(text)] if text else []


def plan_child_nodes(plan: Mapping[str, Any] | None) -> dict[str, tuple[int, list[HashingNode]]]:
    """partition -> (ring seqNo it was planned on, child nodes) of a resize clustering plan (its
    groups' extraMetadata, as Avro-decoded); empty for any other plan."""
    out: dict[str, tuple[int, list[HashingNode]]] = {}
    for group in (plan or {}).get("inputGroups") or []:
        meta = group.get("extraMetadata") or {}
        if META_CHILD_NODE_KEY not in meta or META_PARTITION_KEY not in meta:
            continue
        seq = int(meta.get(META_SEQUENCE_NUMBER_KEY) or -1)
        out.setdefault(meta[META_PARTITION_KEY] or "", (seq, []))[1].extend(nodes_from_json(meta[META_CHILD_NODE_KEY]))
    return out


@dataclass(frozen=True)
class HashingMetadata:
    """A partition's ring at one instant (``HoodieConsistentHashingMetadata``)."""

    partition_path: str
    instant: str
    num_buckets: int
    seq_no: int
    nodes: tuple[HashingNode, ...]
    version: int = 0

    @classmethod
    def default(cls, partition: str, num_buckets: int) -> HashingMetadata:
        return cls(partition, INIT_INSTANT, num_buckets, 0, tuple(default_nodes(partition, num_buckets)))

    @property
    def file_name(self) -> str:
        return self.instant + HASHING_META_SUFFIX

    def to_bytes(self) -> bytes:
        return _java_pretty({"version": self.version, "partitionPath": self.partition_path, "instant": self.instant,
                             "numBuckets": self.num_buckets, "seqNo": self.seq_no,
                             "nodes": [n.to_json() for n in self.nodes]}).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> HashingMetadata:
        d = json.loads(data.decode("utf-8"))
        return cls(d.get("partitionPath") or "", d["instant"], int(d["numBuckets"]), int(d["seqNo"]),
                   tuple(HashingNode.from_json(n) for n in d.get("nodes") or []), int(d.get("version") or 0))

    def resized(self, children: Iterable[HashingNode], instant: str) -> HashingMetadata:
        """The ring after a resize: ``children`` applied, every node NORMAL, ``seqNo + 1``."""
        nodes = [replace(n, tag=NORMAL) for n in Ring(self, children).nodes]
        return HashingMetadata(self.partition_path, instant, self.num_buckets, self.seq_no + 1, tuple(nodes),
                               self.version)


@dataclass
class Ring:
    """``ConsistentBucketIdentifier``: the ring of ``metadata`` with ``children`` (a pending
    resize's REPLACE / DELETE nodes) taking the place of the nodes they name."""

    metadata: HashingMetadata
    children: Iterable[HashingNode] = ()
    by_value: dict[int, HashingNode] = field(init=False)

    def __post_init__(self) -> None:
        ring = {n.value: n for n in self.metadata.nodes}
        for c in self.children:
            if c.tag == REPLACE:
                ring[c.value] = c
            elif c.tag == DELETE:
                if ring.pop(c.value, None) is None:
                    raise ValueError(f"a DELETE child node names no node of the ring (value {c.value})")
            else:
                raise ValueError(f"child node {c} is tagged {c.tag}, not REPLACE or DELETE")
        self.by_value = dict(sorted(ring.items()))
        self._values = list(self.by_value)

    @property
    def nodes(self) -> list[HashingNode]:
        return list(self.by_value.values())

    def index_of_hash(self, h: int) -> int:
        """The position (in :attr:`nodes`) of the first node whose value is >= ``h``, wrapping."""
        i = bisect_left(self._values, h)
        return 0 if i == len(self._values) else i

    def positions(self, hashes: np.ndarray) -> np.ndarray:
        """:meth:`index_of_hash` of many hashes at once (int32), by one ``np.searchsorted``."""
        values = np.asarray(self._values, np.int64)
        at = np.searchsorted(values, hashes, side="left")
        at[at == len(values)] = 0
        return at.astype(np.int32)

    def node_of(self, record_key: str, fields: Sequence[str], parser: str) -> HashingNode:
        return self.nodes[self.index_of_hash(key_hash(record_key, fields, parser))]

    def former(self, node: HashingNode) -> HashingNode:
        """The node before ``node`` on the ring (its range starts after the former's value)."""
        i = self._values.index(node.value)
        return self.nodes[i - 1]

    def latter(self, node: HashingNode) -> HashingNode:
        i = self._values.index(node.value)
        return self.nodes[(i + 1) % len(self._values)]

    def split(self, node: HashingNode, new_prefix: str, new_prefix2: str) -> list[HashingNode] | None:
        """``splitBucket``: two REPLACE children at the middle of ``node``'s range (wrapping
        ranges measured past MAX_INT), None when the range cannot be halved."""
        prev = self.former(node).value
        mid = prev + node.value + (0 if prev < node.value else HASH_VALUE_MASK + 1)
        mid = (mid >> 1) & HASH_VALUE_MASK
        if mid in (prev, node.value):
            return None
        return [HashingNode(mid, new_prefix, REPLACE), HashingNode(node.value, new_prefix2, REPLACE)]

    def merge(self, nodes: Sequence[HashingNode], new_prefix: str) -> list[HashingNode]:
        """``mergeBucket``: adjacent ``nodes`` (in ring order) become one REPLACE child at the
        last one's value; the others DELETE."""
        if len(nodes) < 2:
            raise ValueError("merging needs at least two adjacent buckets")
        for a, b in zip(nodes, nodes[1:]):
            if self.former(b).value != a.value:
                raise ValueError("cannot merge a discontinuous hash range")
        return [HashingNode(n.value, None, DELETE) for n in nodes[:-1]] + [HashingNode(nodes[-1].value, new_prefix,
                                                                                        REPLACE)]


__all__ = ["COMMIT_MARKER_SUFFIX", "DELETE", "HASHING_META_FOLDER", "HASHING_META_SUFFIX", "HASH_VALUE_MASK",
           "HashingMetadata", "HashingNode", "INIT_INSTANT", "META_CHILD_NODE_KEY", "META_PARTITION_KEY",
           "META_SEQUENCE_NUMBER_KEY", "NORMAL", "REPLACE", "Ring", "default_file_id_prefix", "default_nodes",
           "key_hash", "key_hashes", "nodes_from_json", "nodes_json", "plan_child_nodes", "xxhash32", "xxhash32_batch"]
