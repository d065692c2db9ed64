"""Hudi 1.x's secondary indexes (``CREATE INDEX idx ON t (col)``): their definitions, the key
of an entry, the file group an entry lives in, and every entry a metadata-table partition
holds, and the record keys of given values (:func:`record_keys_for`). The encoding of its
records (:func:`secondary_index_records`) is here too; what a data instant changes in an index
is a writer's business (``actions.metadata_table.secondary_index_writer``).

An index ``secondary_index_<name>`` is a metadata-table partition (its definition in
``.hoodie/.index_defs/index.json``, :func:`~stats_partitions.index_definitions`). Each
entry is a ``HoodieMetadataRecord`` of type 7 keyed ``escape(value) + "$" +
escape(recordKey)`` whose ``SecondaryIndexMetadata.isDeleted`` marks a tombstone
(SecondaryIndexKeyUtils, HoodieMetadataPayload). Escaping puts a ``\\`` before each ``\\``,
``$`` and NUL, so the first unescaped ``$`` splits the key; a null value is a lone NUL.
The value is the text of the column's value as the engine holds it: a string as is, a DATE
as its epoch day ("19737"), an integer in decimal, a boolean as ``true``/``false``.

The partition has N file groups ``<partition name with _ as ->-%04d-0`` (N fixed when it was
built). Which one holds an entry depends on the index version (``HoodieIndexVersion``, the
definition's ``"version"``; a new definition gets the table's release line's): V2 (table
version 9) hashes the escaped value with its trailing ``$``, so all entries of a value share
a file group; V1 (table version 8) hashes the whole key. The hash is Hudi's
mapRecordKeyToFileGroupIndex (:func:`~record_index.file_group_index`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieNotSupportedError
from airflow_hoodie.table.java_hash import file_group_indexes
from airflow_hoodie.table.metadata_table.metadata_record import encode_record
from airflow_hoodie.table.metadata_table.record_index import file_group_index
from airflow_hoodie.table.metadata_table.stats_partitions import index_definitions
from airflow_hoodie.table.metadata_table.stats_reader import (
    IndexPartitionFiles,
    index_partition_files,
    slice_records,
)

if TYPE_CHECKING:
    from airflow_hoodie.table.file_group.file_group import FileSlice
    from airflow_hoodie.table.hoodie_table import HoodieTable

SECONDARY_INDEX_PREFIX = "secondary_index_"
SECONDARY_INDEX_TYPE = "secondary_index"
#: HoodieMetadataRecord.type of a secondary-index entry
TYPE_SECONDARY_INDEX = 7
SEPARATOR = "$"
ESCAPE = "\\"
#: the escaped form of a null value
NULL_VALUE = "\0"
_SPECIAL = frozenset((ESCAPE, SEPARATOR, NULL_VALUE))
#: index versions whose mapping we know: V1 hashes the whole key, V2 its value part
KNOWN_VERSIONS = ("V1", "V2")


# ------------------------------------------------------------------------ keys
def escape(value: str | None) -> str:
    """SecondaryIndexKeyUtils.escapeSpecialChars: ``\\`` before each ``\\``, ``$`` and NUL; a
    null value is a lone NUL."""
    if value is None:
        return NULL_VALUE
    if not _SPECIAL.intersection(value):
        return value
    return "".join(ESCAPE + c if c in _SPECIAL else c for c in value)


def unescape(text: str) -> str | None:
    """The inverse of :func:`escape` (a lone NUL is None)."""
    if text == NULL_VALUE:
        return None
    out, escaped = [], False
    for c in text:
        if c == ESCAPE and not escaped:
            escaped = True
            continue
        out.append(c)
        escaped = False
    return "".join(out)


def secondary_index_key(value: str | None, record_key: str) -> str:
    """The key of the entry mapping ``value`` to ``record_key``."""
    return escape(value) + SEPARATOR + escape(record_key)


def _separator_at(key: str) -> int:
    """Where the first unescaped ``$`` of ``key`` is."""
    escaped = False
    for i, c in enumerate(key):
        if c == ESCAPE and not escaped:
            escaped = True
        elif c == SEPARATOR and not escaped:
            return i
        else:
            escaped = False
    raise HoodieCorruptedDataError(f"{key!r} is not a secondary-index key: it has no unescaped {SEPARATOR!r}.")


def split_key(key: str) -> tuple[str | None, str]:
    """(value, record key) of an entry's key, unescaped."""
    at = _separator_at(key)
    return unescape(key[:at]), unescape(key[at + 1:]) or ""


def hashed_part(key: str, version: str) -> str:
    """What decides an entry's file group: V2 the escaped value with its trailing ``$``
    (HoodieTableMetadataUtil.getSecondaryKeyToFileGroupMappingFunction with extraction on),
    V1 the whole key."""
    if version == "V1":
        return key
    if version == "V2":
        return key[:_separator_at(key) + 1]
    raise HoodieNotSupportedError(f"Secondary-index version {version!r}: airflow-hoodie knows where V1 and V2 "
                                  "indexes keep their entries, not this one. Run this job with Hudi itself.")


def entry_file_group(key: str, file_group_count: int, version: str) -> int:
    """The index of the file group an entry with ``key`` lives in."""
    return file_group_index(hashed_part(key, version), file_group_count)


def file_group_id(partition: str, index: int) -> str:
    """HoodieTableMetadataUtil.getFileIDForFileGroup of a secondary (or expression) index."""
    return f"{partition.replace('_', '-')}-{index:04d}-0"


# ------------------------------------------------------------------------ values
def index_texts(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The text each value of a data column is indexed by (null for a null), as Hudi's Spark
    writer stores it: a string as is, a DATE as its epoch day, an integer in decimal, a
    boolean as ``true``/``false``. Other types are refused: their text depends on the engine."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], column.type)
    kind = column.type
    if pa.types.is_dictionary(kind):  # a reader's encoding, not the column's type
        return index_texts(pc.cast(column, kind.value_type))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return column.cast(pa.string())
    if pa.types.is_null(kind):
        return pa.nulls(len(column), pa.string())
    if pa.types.is_date32(kind):
        return pc.cast(pc.cast(column, pa.int32()), pa.string())
    if pa.types.is_date64(kind):
        days = pc.divide(pc.cast(column, pa.int64()), 86_400_000)  # whole days: date64 holds midnights
        return pc.cast(days, pa.string())
    if pa.types.is_integer(kind):
        return pc.cast(column, pa.string())
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "true", "false")
    raise HoodieNotSupportedError(
        f"A secondary index on a {kind} column: airflow-hoodie indexes string, date, integer and boolean columns, "
        "whose text Hudi's writers agree on; keep this index with Hudi itself.")


def index_values(column: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """:func:`index_texts` as Python values (None for a null)."""
    return index_texts(column).to_pylist()


def _escaped(texts: pa.Array) -> pa.Array:
    """:func:`escape` of every text, in Arrow: the backslashes first, so the ones added
    before ``$`` and NUL are not doubled."""
    out = pc.replace_substring(texts, ESCAPE, ESCAPE + ESCAPE)
    out = pc.replace_substring(out, SEPARATOR, ESCAPE + SEPARATOR)
    out = pc.replace_substring(out, NULL_VALUE, ESCAPE + NULL_VALUE)
    return pc.fill_null(out, NULL_VALUE)


def entry_keys(texts: pa.Array, record_keys: pa.Array) -> pa.Array:
    """:func:`secondary_index_key` of every (indexed text, record key) pair, in Arrow."""
    return pc.binary_join_element_wise(_escaped(texts), _escaped(record_keys.cast(pa.string())), SEPARATOR)


#: an entry key's escaped value with its first unescaped ``$`` (V2's hashed part)
_VALUE_PART = r"(?s)^(?P<part>(?:[^\\$]|\\.)*\$)"


def entry_file_groups(keys: pa.Array, file_group_count: int, version: str) -> np.ndarray:
    """:func:`entry_file_group` of every entry key, in numpy."""
    if version == "V1":
        return file_group_indexes(keys, file_group_count)
    if version == "V2":
        parts = pc.struct_field(pc.extract_regex(keys, _VALUE_PART), "part")
        if parts.null_count:
            bad = keys.filter(pc.is_null(parts))[0].as_py()
            raise HoodieCorruptedDataError(f"{bad!r} is not a secondary-index key: it has no unescaped {SEPARATOR!r}.")
        return file_group_indexes(parts, file_group_count)
    hashed_part("", version)  # raises the refusal that names the version
    raise AssertionError(version)


# ------------------------------------------------------------------------ definitions
@dataclass(frozen=True)
class SecondaryIndexDefinition:
    """One secondary index of ``index.json``: its name (also its metadata-table partition),
    the column it indexes and its version."""

    name: str
    source_field: str
    version: str

    @classmethod
    def parse(cls, name: str, definition: dict[str, Any], default_version: str | None) -> SecondaryIndexDefinition:
        fields = list(definition.get("sourceFields") or [])
        function = definition.get("indexFunction") or "identity"
        if len(fields) != 1 or function != "identity":
            raise HoodieNotSupportedError(
                f"The secondary index {name} indexes {fields} through {function!r}; airflow-hoodie reads secondary "
                "indexes on one column as it is. Keep this index with Hudi itself.")
        version = str(definition.get("version") or default_version or "")
        if version not in KNOWN_VERSIONS:
            raise HoodieNotSupportedError(
                f"The secondary index {name} has version {version!r}; airflow-hoodie knows V1 and V2. Keep this index "
                "with Hudi itself.")
        return cls(name, fields[0], version)


def secondary_index_definitions(table: HoodieTable) -> list[SecondaryIndexDefinition]:
    """The table's secondary indexes, in the order ``index.json`` lists them."""
    default = table.format.release.secondary_index_version
    return [SecondaryIndexDefinition.parse(name, d, default) for name, d in index_definitions(table).items()
            if d.get("indexType") == SECONDARY_INDEX_TYPE or name.startswith(SECONDARY_INDEX_PREFIX)]


# ------------------------------------------------------------------------ entries
@dataclass(frozen=True)
class SecondaryIndexEntry:
    """One record of a secondary index as written: its key, whether it is a tombstone, the
    file group it was read from and where (file, and block of a log file)."""

    key: str
    deleted: bool
    file_group: int
    where: str

    @property
    def value(self) -> str | None:
        return split_key(self.key)[0]

    @property
    def record_key(self) -> str:
        return split_key(self.key)[1]


def _deleted(key: str, record: dict[str, Any] | None, where: str) -> bool:
    if record is None:  # a key of a delete block
        return True
    info = record.get("SecondaryIndexMetadata")
    if int(record.get("type") or 0) != TYPE_SECONDARY_INDEX or info is None:
        raise HoodieCorruptedDataError(f"{where}: record {key!r} of a secondary index is not a type-7 record.")
    return bool(info.get("isDeleted"))


def group_entries(table: HoodieTable, files: IndexPartitionFiles, definition: SecondaryIndexDefinition,
                  index: int, prefixes: list[bytes] | None = None) -> Iterator[SecondaryIndexEntry]:
    """The entries of file group ``index``, in order (the blocks of ``files.valid`` instants:
    a writer undoing or reconciling blocks narrows it; ``prefixes``: only keys starting with
    one, read through the HFiles' key index)."""
    file_slice = files.slices[index]
    if file_slice.file_id != file_group_id(definition.name, index):
        raise HoodieNotSupportedError(
            f"The secondary index {definition.name} of {table.base_uri} has the file group {file_slice.file_id}, "
            f"not Hudi's {file_group_id(definition.name, index)}; it cannot be read.")
    yield from slice_entries(files, file_slice, index, prefixes)


def slice_entries(files: IndexPartitionFiles, file_slice: FileSlice, index: int,
                  prefixes: list[bytes] | None = None) -> Iterator[SecondaryIndexEntry]:
    """The entries of one slice of the index's file group ``index``, in order."""
    for key, record, where in slice_records(files, file_slice, prefixes=prefixes):
        yield SecondaryIndexEntry(key, _deleted(key, record, where), index, where)


def secondary_index_entries(table: HoodieTable, definition: SecondaryIndexDefinition) -> Iterator[SecondaryIndexEntry]:
    """Every entry of the index's partition, file group by file group, each in the order that
    decides the live one (base HFile, then log blocks of valid instants)."""
    files = index_partition_files(table, definition.name)
    for index in range(files.count):
        yield from group_entries(table, files, definition, index)


def record_keys_for(table: HoodieTable, definition: SecondaryIndexDefinition,
                    values: Iterable[str | None]) -> dict[str | None, set[str]]:
    """value -> the record keys of the rows holding it (``values`` as :func:`index_values`
    gives them; None for null). A V2 index is read only in the file groups the values hash
    to, one per value; a V1 index spreads a value's entries over every file group."""
    prefixes = {escape(v) + SEPARATOR: v for v in values}
    files = index_partition_files(table, definition.name)
    if definition.version == "V2":
        groups = sorted({entry_file_group(prefix, files.count, "V2") for prefix in prefixes})
    else:
        groups = list(range(files.count))
    raw = sorted(p.encode("utf-8") for p in prefixes)  # read through the HFiles' key index
    wanted = [e for g in groups for e in group_entries(table, files, definition, g, raw)
              if e.key[:_separator_at(e.key) + 1] in prefixes]
    out: dict[str | None, set[str]] = {v: set() for v in prefixes.values()}
    for key in live_keys(wanted):
        value, record_key = split_key(key)
        out[value].add(record_key)
    return out


def secondary_index_cells(keys: pa.Array, deleted: pa.Array, table_version: int,
                          file_name: str | None = None) -> tuple[pa.Array, pa.Array]:
    """(HFile keys, Avro values) of the type-7 records of entry ``keys`` (unique) and their
    tombstone flags, sorted by the keys' UTF-8 bytes as an HFile must be
    (HoodieMetadataPayload.createSecondaryIndexRecord: the record's own ``key`` field stays
    empty, the HFile key carries it, so a value is one of two byte strings). ``file_name``: the
    base file the records go to (``_hoodie_file_name``), as a compaction's merge handle writes."""
    order = pc.sort_indices(keys)  # Arrow orders strings by their UTF-8 bytes
    kinds = pa.array([_record_value(False, table_version, file_name), _record_value(True, table_version, file_name)],
                     pa.binary())
    values = kinds.take(pc.cast(deleted.take(order), pa.int8()))
    return keys.take(order).cast(pa.binary()), values


def secondary_index_records(entries: Mapping[str, bool], table_version: int,
                            file_name: str | None = None) -> list[tuple[bytes, bytes]]:
    """:func:`secondary_index_cells` of ``entry key -> tombstone?`` as (key, value) pairs."""
    rows, values = secondary_index_cells(pa.array(list(entries), pa.string()),
                                         pa.array([bool(d) for d in entries.values()], pa.bool_()), table_version,
                                         file_name)
    return list(zip(rows.to_pylist(), values.to_pylist()))


@lru_cache(maxsize=64)
def _record_value(deleted: bool, table_version: int, file_name: str | None) -> bytes:
    """The Avro value of a type-7 record: the same bytes for every entry of a kind, since the
    key lives in the HFile key, not in the record."""
    record: dict[str, Any] = {"key": "", "type": TYPE_SECONDARY_INDEX, "SecondaryIndexMetadata": {"isDeleted": deleted}}
    if file_name is not None:
        record["_hoodie_file_name"] = file_name
    return encode_record(record, table_version)


def live_keys(entries: Iterable[SecondaryIndexEntry]) -> set[str]:
    """The keys whose last entry (in the order :func:`secondary_index_entries` gives) is live."""
    live: dict[str, bool] = {}
    for entry in entries:
        live[entry.key] = not entry.deleted
    return {key for key, alive in live.items() if alive}


__all__ = ["SecondaryIndexDefinition", "SecondaryIndexEntry", "entry_file_group", "entry_file_groups", "entry_keys",
           "escape", "index_texts", "file_group_id",
           "group_entries", "hashed_part", "index_values", "live_keys", "record_keys_for", "secondary_index_definitions",
           "secondary_index_cells", "secondary_index_entries", "secondary_index_key", "secondary_index_records", "slice_entries",
           "split_key", "unescape"]
