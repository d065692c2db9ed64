"""Commit metadata: the JSON body of ``.commit``, ``.deltacommit`` and ``.replacecommit`` files.

This is the one model of commit metadata for every table version: table version 6 stores
this JSON; versions 8 and 9 store the same model as Avro, which
:mod:`~airflow_hoodie.table.timeline.commit_serde_v2` writes from these dataclasses and reads
back into them.

Hudi 0.x writes these files with Jackson from ``HoodieCommitMetadata`` /
``HoodieReplaceCommitMetadata`` and their ``HoodieWriteStat`` / ``HoodieDeltaWriteStat``
entries: a pretty-printed object (``"key" : value``, two-space indent, ``[ {`` arrays,
no trailing newline) whose keys follow the Java fields' declaration order. We parse
that JSON into typed dataclasses and write it back in the same layout, keeping keys we do
not model and the original key order, so a commit file survives parse -> write unchanged
(byte for byte for every file of the conformance corpus).

Maps in Hudi's model are ``java.util.HashMap``; :func:`java_hash_map_order` reproduces
their iteration order for metadata we create, so our new commit files look like Hudi's.
"""

from __future__ import annotations

import decimal
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Iterator, Mapping

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.java_hash import java_string_hash

#: HoodieWriteStat.NULL_COMMIT: the prevCommit of a file written fresh.
NULL_COMMIT = "null"
#: extraMetadata key holding the writer's Avro schema (HoodieCommitMetadata.SCHEMA_KEY).
SCHEMA_KEY = "schema"
#: extraMetadata key Hudi blanks when archiving (HoodieRollingStatMetadata.ROLLING_STAT_METADATA_KEY).
ROLLING_STAT_KEY = "ROLLING_STAT"

# (JSON name, attribute, default for a new stat) in HoodieWriteStat's field order.
_BASE_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("fileId", "file_id", None),
    ("path", "path", None),
    ("cdcStats", "cdc_stats", None),
    ("prevCommit", "prev_commit", NULL_COMMIT),
    ("numWrites", "num_writes", 0),
    ("numDeletes", "num_deletes", 0),
    ("numUpdateWrites", "num_update_writes", 0),
    ("numInserts", "num_inserts", 0),
    ("totalWriteBytes", "total_write_bytes", 0),
    ("totalWriteErrors", "total_write_errors", 0),
    ("tempPath", "temp_path", None),
    ("partitionPath", "partition_path", None),
    ("totalLogRecords", "total_log_records", 0),
    ("totalLogFilesCompacted", "total_log_files_compacted", 0),
    ("totalLogSizeCompacted", "total_log_size_compacted", 0),
    ("totalUpdatedRecordsCompacted", "total_updated_records_compacted", 0),
    ("totalLogBlocks", "total_log_blocks", 0),
    ("totalCorruptLogBlock", "total_corrupt_log_block", 0),
    ("totalRollbackBlocks", "total_rollback_blocks", 0),
    ("fileSizeInBytes", "file_size_in_bytes", 0),
    ("minEventTime", "min_event_time", None),
    ("maxEventTime", "max_event_time", None),
    ("runtimeStats", "runtime_stats", None),
)
# HoodieDeltaWriteStat's own fields, serialized after the base ones.
_DELTA_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("logVersion", "log_version", 0),
    ("logOffset", "log_offset", 0),
    ("baseFile", "base_file", None),
    ("logFiles", "log_files", None),
    ("recordsStats", "records_stats", None),
)
_ALL_FIELDS = _BASE_FIELDS + _DELTA_FIELDS
_JSON_TO_ATTR = {j: a for j, a, _ in _ALL_FIELDS}
_DELTA_KEYS = frozenset(j for j, _, _ in _DELTA_FIELDS)

# Fields of the Avro HoodieWriteStat (archive form) that have a JSON counterpart.
_AVRO_STAT_FIELDS = (
    "fileId", "path", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites", "totalWriteBytes",
    "totalWriteErrors", "partitionPath", "totalLogRecords", "totalLogFiles", "totalUpdatedRecordsCompacted",
    "numInserts", "totalLogBlocks", "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes",
)


# ---------------------------------------------------------------------------- Java compat
def java_hash_map_order(keys: Iterable[str | None]) -> list[str | None]:
    """Iteration order of a ``java.util.HashMap`` filled with ``keys`` (in that order).

    Capacity grows from 16 by doubling at load factor 0.75, buckets are visited in index
    order and a bucket keeps insertion order (bins that Java would treeify, more than 8
    colliding keys, are kept in insertion order too).
    """
    keys = list(dict.fromkeys(keys))
    capacity = 16
    while len(keys) > capacity * 0.75:
        capacity *= 2

    def bucket(key: str | None) -> int:
        if key is None:
            return 0
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    indexed = sorted(enumerate(keys), key=lambda item: (bucket(item[1]), item[0]))
    return [k for _, k in indexed]


def _java_ordered(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: mapping[k] for k in java_hash_map_order(mapping)}


def to_jackson_json(value: Any) -> str:
    """``value`` as Jackson's default pretty printer writes it (Hudi's ``toJsonString``)."""
    out: list[str] = []
    _emit(value, 0, out)
    return "".join(out)


def _emit(value: Any, level: int, out: list[str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        pad = "  " * (level + 1)
        out.append("{\n")
        first = True
        for key, item in value.items():
            if not first:
                out.append(",\n")
            first = False
            out.append(pad)
            out.append(json.dumps(key if key is not None else "null", ensure_ascii=False))
            out.append(" : ")
            _emit(item, level + 1, out)
        out.append("\n" + "  " * level + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _emit(item, level, out)
        out.append(" ]")
    elif isinstance(value, float):
        out.append(_java_double(value))
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def _java_double(value: float) -> str:
    """Jackson writes doubles with ``Double.toString``: ``1.0``, ``0.001``, ``1.0E-4``, ``1.0E7``."""

    if value != value or value in (float("inf"), float("-inf")):
        return json.dumps(value)  # Jackson would fail too; keep something parseable
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = format(decimal.Decimal(repr(value)), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    exp = len(digits) - 1 + int(exponent)
    return ("-" if sign else "") + f"{mantissa}E{exp}"


# ---------------------------------------------------------------------------- write stat
@dataclass
class WriteStat:
    """One file written by a commit (HoodieWriteStat; delta fields for log appends).

    Attribute names are the snake_case of Hudi's JSON keys; ``is_delta`` marks a
    HoodieDeltaWriteStat (MOR log append), whose JSON carries the ``logVersion``,
    ``logOffset``, ``baseFile``, ``logFiles`` and ``recordsStats`` keys too.
    """

    file_id: str | None = None
    path: str | None = None
    cdc_stats: Any = None
    prev_commit: str | None = NULL_COMMIT
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    temp_path: str | None = None
    partition_path: str | None = None
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: dict[str, Any] | None = None
    log_version: int = 0
    log_offset: int = 0
    base_file: str | None = None
    log_files: list[str] | None = None
    records_stats: Any = None
    is_delta: bool = False
    #: keys we do not model, kept so a round trip loses nothing
    extra: dict[str, Any] = field(default_factory=dict)
    #: JSON key order of the parsed file (None for stats we create)
    key_order: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "WriteStat":
        if not isinstance(data, Mapping):
            raise HoodieCorruptedDataError(f"a write stat must be a JSON object, got {type(data).__name__}")
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            attr = _JSON_TO_ATTR.get(key)
            if attr is None:
                extra[key] = value
            else:
                kwargs[attr] = value
        return cls(
            **kwargs,
            is_delta=any(k in _DELTA_KEYS for k in data),
            extra=extra,
            key_order=tuple(data.keys()),
        )

    @classmethod
    def new(cls, **json_fields: Any) -> "WriteStat":
        """A stat we create, named by Hudi's JSON fields; a delta stat (MOR log append) when
        one of HoodieDeltaWriteStat's own fields is given."""
        unknown = sorted(set(json_fields) - set(_JSON_TO_ATTR))
        if unknown:
            raise ValueError(f"{unknown} are not HoodieWriteStat fields")
        kwargs = {_JSON_TO_ATTR[k]: v for k, v in json_fields.items()}
        if any(k in _DELTA_KEYS for k in json_fields):
            return cls.delta(**kwargs)
        return cls(**kwargs)

    @classmethod
    def delta(cls, **kwargs: Any) -> "WriteStat":
        """A new HoodieDeltaWriteStat with Hudi's defaults (empty log file list, no column stats)."""
        kwargs.setdefault("log_files", [])
        kwargs.setdefault("records_stats", {"val": None})
        return cls(is_delta=True, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Hudi's JSON object for this stat, keys in Hudi's (or the parsed file's) order."""
        values: dict[str, Any] = {}
        for json_name, attr, _ in _BASE_FIELDS:
            values[json_name] = getattr(self, attr)
        if self.is_delta:
            for json_name, attr, _ in _DELTA_FIELDS:
                values[json_name] = getattr(self, attr)
        values.update(self.extra)
        if self.key_order is None:
            return values
        # keys the parsed file lacked come back only when changed from their default
        defaults = {j: d for j, _, d in _ALL_FIELDS}
        ordered = {k: values[k] for k in self.key_order if k in values}
        for key, value in values.items():
            if key not in ordered and (key in self.extra or value != defaults.get(key)):
                ordered[key] = value
        return ordered

    def to_avro(self) -> dict[str, Any]:
        """The Avro HoodieWriteStat of the archive (fields without a JSON counterpart are null)."""
        as_json = self.to_dict()
        return {name: as_json.get(name) for name in _AVRO_STAT_FIELDS}

    @classmethod
    def from_avro(cls, record: Mapping[str, Any]) -> "WriteStat":
        kwargs = {_JSON_TO_ATTR[k]: v for k, v in record.items() if k in _JSON_TO_ATTR and v is not None}
        extra = {k: v for k, v in record.items() if k not in _JSON_TO_ATTR and v is not None}
        return cls(**kwargs, extra=extra)

    @property
    def file_name(self) -> str | None:
        """Last component of ``path``."""
        return self.path.rsplit("/", 1)[-1] if self.path else None


# ---------------------------------------------------------------------------- commit
_COMMIT_KEYS = ("partitionToWriteStats", "compacted", "extraMetadata", "operationType")


@dataclass
class CommitMetadata:
    """Body of a ``.commit`` / ``.deltacommit`` (and ``.inflight``) file."""

    partition_to_write_stats: dict[str | None, list[WriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = "UNKNOWN"
    #: top-level keys we do not model (kept for round trips)
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    _OWN_KEYS: ClassVar[tuple[str, ...]] = _COMMIT_KEYS

    # ---- parsing / writing
    @classmethod
    def from_json(cls, data: bytes | str) -> "CommitMetadata":
        """Parse Hudi's commit JSON. Empty content (a ``.requested`` file) gives an empty commit."""
        obj = _load_json(data)
        return cls._from_obj(obj)

    @classmethod
    def _from_obj(cls, obj: Mapping[str, Any]) -> "CommitMetadata":
        inst = cls()
        stats = obj.get("partitionToWriteStats") or {}
        if not isinstance(stats, Mapping):
            raise HoodieCorruptedDataError("partitionToWriteStats must be a JSON object")
        inst.partition_to_write_stats = {
            p: [WriteStat.from_dict(s) for s in (lst or [])]
            for p, lst in stats.items()
        }
        inst.compacted = bool(obj.get("compacted", False))
        inst.extra_metadata = dict(obj.get("extraMetadata") or {})
        inst.operation_type = obj.get("operationType")
        inst._read_own(obj)
        inst.extra = {k: v for k, v in obj.items() if k not in inst._OWN_KEYS}
        inst.key_order = tuple(obj.keys())
        return inst

    def _read_own(self, obj: Mapping[str, Any]) -> None:
        """Hook for subclasses' extra keys."""

    def _own_values(self) -> dict[str, Any]:
        return {
            "partitionToWriteStats": {
                p: [s.to_dict() for s in stats] for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }

    def to_dict(self) -> dict[str, Any]:
        values = self._own_values()
        values.update(self.extra)
        if self.key_order is None:
            return values
        ordered = {k: values[k] for k in self.key_order if k in values}
        for key, value in values.items():
            # keys the parsed file did not have come back only when they carry something
            if key not in ordered and value not in (None, {}, []):
                ordered[key] = value
        return ordered

    def to_json(self, java_map_order: bool = False) -> bytes:
        """Hudi's JSON bytes (Jackson pretty print, UTF-8, no trailing newline).

        ``java_map_order=True`` reorders partition and extra-metadata maps as Java's
        HashMap would iterate them (use it for metadata we create; parsed metadata keeps
        its file's order by default).
        """
        obj = self.to_dict()
        if java_map_order:
            for key in ("partitionToWriteStats", "extraMetadata", "partitionToReplaceFileIds"):
                if isinstance(obj.get(key), Mapping):
                    obj[key] = _java_ordered(obj[key])
        return to_jackson_json(obj).encode("utf-8")

    # ---- views
    @property
    def write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def iter_write_stats(self) -> Iterator[tuple[str | None, WriteStat]]:
        for partition, stats in self.partition_to_write_stats.items():
            for stat in stats:
                yield partition, stat

    @property
    def partitions(self) -> list[str | None]:
        return list(self.partition_to_write_stats)

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema (JSON text) recorded in extraMetadata, if any."""
        value = self.extra_metadata.get(SCHEMA_KEY)
        return value or None

    def files_written(self) -> list[str]:
        """Paths (relative to the table base path) of every base/log file this commit wrote."""
        return [s.path for s in self.write_stats if s.path]

    def file_ids(self) -> set[tuple[str | None, str]]:
        """(partition, fileId) of every file group touched."""
        return {(p, s.file_id) for p, s in self.iter_write_stats() if s.file_id}

    def file_id_to_path(self) -> dict[str, str]:
        return {s.file_id: s.path for s in self.write_stats if s.file_id and s.path}

    @property
    def total_records_written(self) -> int:
        return sum(s.num_writes or 0 for s in self.write_stats)

    @property
    def total_inserts(self) -> int:
        return sum(s.num_inserts or 0 for s in self.write_stats)

    @property
    def total_updates(self) -> int:
        return sum(s.num_update_writes or 0 for s in self.write_stats)

    @property
    def total_deletes(self) -> int:
        return sum(s.num_deletes or 0 for s in self.write_stats)

    @property
    def total_bytes_written(self) -> int:
        return sum(s.total_write_bytes or 0 for s in self.write_stats)

    @property
    def total_write_errors(self) -> int:
        return sum(s.total_write_errors or 0 for s in self.write_stats)

    def add_write_stat(self, partition_path: str, stat: WriteStat) -> None:
        self.partition_to_write_stats.setdefault(partition_path, []).append(stat)

    # ---- archive form
    def to_avro(self) -> dict[str, Any]:
        """Avro ``HoodieCommitMetadata`` record as Hudi's archiver converts it.

        Hudi converts the JSON model with Jackson (so ``version`` stays unset), drops the
        null partition, sets operationType ``COMPACT`` for compactions and blanks the
        rolling-stats extra-metadata key.
        """
        extra = dict(self.extra_metadata)
        extra[ROLLING_STAT_KEY] = ""
        return {
            "partitionToWriteStats": {
                p: [s.to_avro() for s in stats]
                for p, stats in self.partition_to_write_stats.items()
                if p is not None
            },
            "extraMetadata": extra,
            "version": None,
            "operationType": "COMPACT" if self.compacted else self.operation_type,
        }

    @classmethod
    def from_avro(cls, record: Mapping[str, Any]) -> "CommitMetadata":
        inst = cls()
        inst.partition_to_write_stats = {
            p: [WriteStat.from_avro(s) for s in stats or []]
            for p, stats in (record.get("partitionToWriteStats") or {}).items()
        }
        inst.extra_metadata = dict(record.get("extraMetadata") or {})
        inst.operation_type = record.get("operationType")
        inst.compacted = inst.operation_type == "COMPACT"
        return inst


@dataclass
class ReplaceCommitMetadata(CommitMetadata):
    """Body of a ``.replacecommit`` file: a commit plus the file groups it replaces."""

    partition_to_replace_file_ids: dict[str, list[str]] = field(default_factory=dict)

    _OWN_KEYS: ClassVar[tuple[str, ...]] = _COMMIT_KEYS + ("partitionToReplaceFileIds",)

    @classmethod
    def from_json(cls, data: bytes | str) -> "ReplaceCommitMetadata":
        obj = _load_json(data)
        return cls._from_obj(obj)  # type: ignore[return-value]

    def _read_own(self, obj: Mapping[str, Any]) -> None:
        value = obj.get("partitionToReplaceFileIds") or {}
        if not isinstance(value, Mapping):
            raise HoodieCorruptedDataError("partitionToReplaceFileIds must be a JSON object")
        self.partition_to_replace_file_ids = {p: list(ids or []) for p, ids in value.items()}

    def _own_values(self) -> dict[str, Any]:
        values = super()._own_values()
        values["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
        }
        return values

    def replaced_file_ids(self) -> set[tuple[str, str]]:
        """(partition, fileId) of every file group this commit replaced."""
        return {(p, f) for p, ids in self.partition_to_replace_file_ids.items() for f in ids}

    def to_avro(self) -> dict[str, Any]:
        """Avro ``HoodieReplaceCommitMetadata`` record for the archive."""
        base = super().to_avro()
        base["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
        }
        return base

    @classmethod
    def from_avro(cls, record: Mapping[str, Any]) -> "ReplaceCommitMetadata":
        base = CommitMetadata.from_avro(record)
        inst = cls(
            partition_to_write_stats=base.partition_to_write_stats,
            compacted=base.compacted,
            extra_metadata=base.extra_metadata,
            operation_type=base.operation_type,
        )
        inst.partition_to_replace_file_ids = {
            p: list(ids or []) for p, ids in (record.get("partitionToReplaceFileIds") or {}).items()
        }
        return inst


def _load_json(data: bytes | str) -> dict[str, Any]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HoodieCorruptedDataError(f"commit metadata is not UTF-8 text: {exc}") from exc
    else:
        text = data
    if not text.strip():
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise HoodieCorruptedDataError(
            f"commit metadata is not valid JSON ({exc})."
        ) from exc
    if not isinstance(obj, dict):
        raise HoodieCorruptedDataError(
            f"commit metadata must be a JSON object, got {type(obj).__name__}"
        )
    return obj


def parse_commit_metadata(data: bytes | str, action: str | None = None) -> CommitMetadata:
    """Parse any commit JSON; a ``replacecommit`` (by action or content) gives ReplaceCommitMetadata."""
    obj = _load_json(data)
    if action == "replacecommit" or "partitionToReplaceFileIds" in obj:
        return ReplaceCommitMetadata._from_obj(obj)
    return CommitMetadata._from_obj(obj)
