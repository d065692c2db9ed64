"""Hudi's simple bucket index, as a format fact: which bucket a record key hashes to, and how
a bucket's file group is named.

A bucket-index table has no index structure to read: the layout *is* the index. A record's
bucket is ``(hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets`` (Hudi's
``BucketIdentifier``), ``hashKeys`` the Java ``List<String>`` of the key's hash-field values,
and the bucket's file group in a partition is the one whose file id starts with the bucket
number as ``%08d``. Writers of any engine (Flink's stream writer, Spark, us) must agree on
every bit of this, or the same key lands in two groups; so the Java hash codes are computed
exactly (int32 wrap-around, ``String.hashCode`` over UTF-16 code units), vectorized with
numpy for ASCII keys, the common case.

How the hash values come out of a complex record key (``f1:v1,f2:v2``) changed in Hudi 1.0
(HUDI-8403): the release line of the table's version says which parser applies
(:attr:`~airflow_hoodie.table.hudi_release.HudiRelease.bucket_hash_key_parser`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.table.java_hash import java_string_hash, java_string_hashes

NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"
#: NBCC writers (Hudi's non-blocking concurrency control) name bucket groups by bucket alone
FIXED_FILE_ID_SUFFIX = "-0000-0000-0000-000000000000"
_MASK32 = 0xFFFFFFFF
#: where Hudi keeps a bucket layout that a fixed bucket count does not describe: the
#: consistent-hashing engine's ``consistent_hashing_metadata`` and Hudi 1.1's partition-level
#: bucket index (``partition_bucket_index_meta``: a bucket count per partition)
BUCKET_INDEX_META_FOLDER = ".hoodie/.bucket_index"


def _int32(h: int) -> int:
    h &= _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def java_list_hash(values: Sequence[str | None]) -> int:
    """Java's ``List.hashCode``: ``h = 31*h + hash(e)`` from 1, a null element hashing to 0."""
    h = 1
    for v in values:
        h = (31 * h + (0 if v is None else java_string_hash(v))) & _MASK32
    return _int32(h)


def _placeholder(value: str) -> str | None:
    if value == NULL_PLACEHOLDER:
        return None
    return "" if value == EMPTY_PLACEHOLDER else value


def _java_split_commas(key: str) -> list[str]:
    """``String.split(",")``: trailing empty strings are dropped (an empty key stays one)."""
    if key == "":
        return [""]
    parts = key.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def hash_keys_split(key: str, fields: Sequence[str]) -> list[str | None]:
    """Hudi 0.x: a key without ``:`` is one value; else each ``,`` part split at its first
    ``:``, a part without ``:`` kept as it is, a ``field:value`` part kept when ``field`` is
    a hash field (or none are named)."""
    if ":" not in key:
        return [key]
    out: list[str | None] = []
    for part in _java_split_commas(key):
        kv = part.split(":", 1)
        if len(kv) == 1:
            out.append(kv[0])
        elif not fields or kv[0] in fields:
            out.append(_placeholder(kv[1]))
    return out


def _last_comma(key: str, at: int) -> int:
    """Java's ``lastIndexOf(",", at)``: -1 for a negative ``at``."""
    return -1 if at < 0 else key.rfind(",", 0, at + 1)


def hash_keys_scan(key: str, fields: Sequence[str]) -> list[str | None]:
    """Hudi 1.x (HUDI-8403): a key lacking ``,`` or ``:`` is one value; else fields are read
    left to right, a value running to the last ``,`` before the next ``:`` (so values may
    hold ``,`` and ``:``, as timestamps do). No value found: the whole key."""
    if "," not in key or ":" not in key:
        return [key]
    take_all = not fields or (len(fields) == 1 and fields[0] == "")
    values: list[str | None] = []
    n, done = len(key), 0
    while done < n:
        sep1 = key.find(":", done)
        if sep1 < 0:
            break
        name = key[done:sep1]
        sep2 = key.find(":", sep1 + 1)
        wanted = take_all or name in fields
        if sep2 < 0:
            if wanted:
                values.append(_placeholder(key[sep1 + 1:]))
            break
        comma = _last_comma(key, sep2)
        while comma < sep1 and sep2 >= 0:
            sep2 = key.find(":", sep2 + 1)
            comma = _last_comma(key, sep2)
        if wanted:
            values.append(_placeholder(key[sep1 + 1:comma if comma > 0 else n]))
            if comma <= 0:
                break
        elif comma < 0:
            break
        done = comma + 1
    return values if values else [key]


def hash_keys(key: str, fields: Sequence[str], parser: str) -> list[str | None]:
    """The hash values of one record key under the table's release line's ``parser``."""
    return hash_keys_scan(key, fields) if parser == "scan" else hash_keys_split(key, fields)


def _ascii_one_value_hashes(keys: pa.Array) -> np.ndarray:
    """``List.hashCode([key])`` of ASCII keys: ``31 + key.hashCode()``, in uint32."""
    return (np.uint64(31) + java_string_hashes(keys).astype(np.uint64)) & np.uint64(_MASK32)


def bucket_ids(keys: pa.Array | pa.ChunkedArray, fields: Sequence[str], num_buckets: int,
               parser: str) -> np.ndarray:
    """The bucket (int32) of each record key: Hudi's ``BucketIdentifier.getBucketId``. Keys
    that are one hash value (ASCII, no ``:``) are hashed in one numpy pass; the rest one by one."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    keys = keys.cast(pa.string())
    if keys.null_count:
        raise ValueError("record keys of a bucket-index write are never null")
    hashes = np.zeros(len(keys), np.uint64)
    one_value = pc.invert(pc.match_substring(keys, ":"))
    if parser == "scan":
        one_value = pc.or_(one_value, pc.invert(pc.match_substring(keys, ",")))
    fast = pc.and_(one_value, pc.string_is_ascii(keys)).to_numpy(zero_copy_only=False)
    if fast.all():
        hashes = _ascii_one_value_hashes(keys)
    elif fast.any():
        hashes[fast] = _ascii_one_value_hashes(keys.filter(pa.array(fast)))
    slow = np.flatnonzero(~fast)
    if len(slow):
        texts = keys.take(pa.array(slow)).to_pylist()
        hashes[slow] = [java_list_hash(hash_keys(k, fields, parser)) & _MASK32 for k in texts]
    return ((hashes & np.uint64(0x7FFFFFFF)) % np.uint64(num_buckets)).astype(np.int32)


def bucket_id_str(bucket: int) -> str:
    """``String.format("%08d", bucket)``."""
    return f"{bucket:08d}"


def new_bucket_file_id(bucket: int) -> str:
    """A new bucket group's file id as Hudi's Spark writer makes it: a random UUID whose
    first 8 characters are the bucket number, then ``-0``."""
    return bucket_id_str(bucket) + str(uuid.uuid4())[8:] + "-0"


def nbcc_bucket_file_id(bucket: int) -> str:
    """A new bucket group's file id under non-blocking concurrency control (Hudi's
    ``BucketIdentifier.newBucketFileIdForNBCC``): fixed per bucket, ``%08d`` +
    :data:`FIXED_FILE_ID_SUFFIX` + ``-0``, so concurrent writers creating one bucket's group
    write it under the same id instead of two groups for one bucket."""
    return bucket_id_str(bucket) + FIXED_FILE_ID_SUFFIX + "-0"


def is_bucket_file_id(file_id: str) -> bool:
    """Whether ``file_id`` names a bucket: its first 8 characters are decimal digits (what
    ``Integer.parseInt(fileId.substring(0, 8))`` accepts from a writer's own names)."""
    return len(file_id) >= 8 and file_id[:8].isascii() and file_id[:8].isdigit()


#: no bucket table has this many buckets per partition (Hudi's default is 256, Flink's 4):
#: a random UUID whose first 8 characters happen to be digits (about 2.3% of them) reads as
#: a bucket below it only when it also starts with ``000`` (about 1 in 43,000)
PLAUSIBLE_BUCKETS = 100_000


def is_bucket_layout_file_id(file_id: str) -> bool:
    """Whether ``file_id`` is evidence that a table is laid out by bucket: a bucket name
    whose number is plausible (:data:`PLAUSIBLE_BUCKETS`). Used to recognize a bucket table
    from its groups alone, where a random id's 8 leading digits must not decide it."""
    return is_bucket_file_id(file_id) and int(file_id[:8]) < PLAUSIBLE_BUCKETS


def bucket_of_file_id(file_id: str) -> int:
    """Hudi's ``BucketIdentifier.bucketIdFromFileId``; ValueError for a non-bucket name (a
    random UUID prefix), which Hudi's writer would fail on."""
    if not is_bucket_file_id(file_id):
        raise ValueError(f"file id {file_id!r} does not start with an 8-digit bucket number")
    return int(file_id[:8])


__all__ = ["PLAUSIBLE_BUCKETS", "bucket_id_str", "bucket_ids", "bucket_of_file_id", "hash_keys", "hash_keys_scan",
           "hash_keys_split", "is_bucket_file_id", "is_bucket_layout_file_id", "java_list_hash", "java_string_hash", "nbcc_bucket_file_id",
           "new_bucket_file_id"]
