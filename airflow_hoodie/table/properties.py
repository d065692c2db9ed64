"""``.hoodie/hoodie.properties``: the table's identity and layout settings.

The file is a ``java.util.Properties`` file, so reading and writing follow Java's
rules exactly (``\\:`` escapes in values, ``\\uXXXX`` for non-ASCII, line continuations);
otherwise a schema value written by Spark would not survive our round trip. Hudi guards
the file against partial writes with ``hoodie.table.checksum``: the CRC32 of
``"<hoodie.database.name>.<hoodie.table.name>"`` (database empty when unset), written
as the last entry.
"""

from __future__ import annotations

import datetime as _dt
import zlib
from typing import Iterator, Mapping

from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieCorruptedDataError,
    HoodieTableExistsError,
    HoodieTableNotFoundError,
)
from airflow_hoodie.table.keygen.keygen_config import TYPE_TO_CLASS
from airflow_hoodie.table.storage.storage import Storage

PROPERTIES_FILE = "hoodie.properties"
PROPERTIES_BACKUP_FILE = "hoodie.properties.backup"
# Hudi deletes its backup once an update succeeded, and readers fall back to it by themselves:
# a bad file with no usable backup beside it can only come back from a copy kept elsewhere
_RESTORE_HINT = ("Restore hoodie.properties from a copy kept outside the table (object-store versioning, "
                 "a snapshot or backup of the table) or from the last working deployment's copy.")

NAME = "hoodie.table.name"
DATABASE_NAME = "hoodie.database.name"
TYPE = "hoodie.table.type"
VERSION = "hoodie.table.version"
TIMELINE_LAYOUT_VERSION = "hoodie.timeline.layout.version"
CHECKSUM = "hoodie.table.checksum"
RECORDKEY_FIELDS = "hoodie.table.recordkey.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
#: Hudi 1.1 (table version 9) name of the ordering field list; 6 and 8 keep hoodie.table.precombine.field
ORDERING_FIELDS = "hoodie.table.ordering.fields"
INITIAL_VERSION = "hoodie.table.initial.version"
KEY_GENERATOR_TYPE = "hoodie.table.keygenerator.type"
TIMELINE_PATH = "hoodie.timeline.path"
TIMELINE_HISTORY_PATH = "hoodie.timeline.history.path"
TABLE_FORMAT = "hoodie.table.format"
RECORD_MERGE_MODE = "hoodie.record.merge.mode"
RECORD_MERGE_STRATEGY_ID = "hoodie.record.merge.strategy.id"
#: version 9: the payload class a table was created with, kept for the record only
LEGACY_PAYLOAD_CLASS = "hoodie.table.legacy.payload.class"
KEY_GENERATOR_CLASS = "hoodie.table.keygenerator.class"
HIVE_STYLE_PARTITIONING = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE_PARTITIONING = "hoodie.datasource.write.partitionpath.urlencode"
BASE_FILE_FORMAT = "hoodie.table.base.file.format"
LOG_FILE_FORMAT = "hoodie.table.log.file.format"
POPULATE_META_FIELDS = "hoodie.populate.meta.fields"
ARCHIVELOG_FOLDER = "hoodie.archivelog.folder"
PAYLOAD_CLASS = "hoodie.compaction.payload.class"
RECORD_MERGER_STRATEGY = "hoodie.compaction.record.merger.strategy"
CREATE_SCHEMA = "hoodie.table.create.schema"
TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"
DROP_PARTITION_COLUMNS = "hoodie.datasource.write.drop.partition.columns"
PARTITION_METAFILE_USE_BASE_FORMAT = "hoodie.partition.metafile.use.base.format"
METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
CDC_ENABLED = "hoodie.table.cdc.enabled"
CDC_SUPPLEMENTAL_LOGGING_MODE = "hoodie.table.cdc.supplemental.logging.mode"
BOOTSTRAP_BASE_PATH = "hoodie.bootstrap.base.path"

COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"

#: Defaults Hudi 0.14 applies when a key is absent.
DEFAULTS: dict[str, str] = {
    TYPE: COPY_ON_WRITE,
    VERSION: "6",
    TIMELINE_LAYOUT_VERSION: "1",
    BASE_FILE_FORMAT: "PARQUET",
    LOG_FILE_FORMAT: "HOODIE_LOG",
    POPULATE_META_FIELDS: "true",
    ARCHIVELOG_FOLDER: "archived",
    HIVE_STYLE_PARTITIONING: "false",
    URL_ENCODE_PARTITIONING: "false",
    DROP_PARTITION_COLUMNS: "false",
    PARTITION_METAFILE_USE_BASE_FORMAT: "false",
    TIMELINE_TIMEZONE: "LOCAL",
    CDC_ENABLED: "false",
}


# ------------------------------------------------------------------ checksum
def compute_checksum(props: Mapping[str, str]) -> int:
    """Hudi's ``HoodieTableConfig.generateChecksum``: CRC32 of ``"<db>.<table>"``."""
    if NAME not in props:
        raise HoodieConfigError(f"{NAME} is required to compute {CHECKSUM}; set the table name.")
    text = f"{props.get(DATABASE_NAME, '')}.{props[NAME]}"
    return zlib.crc32(text.encode("utf-8")) & 0xFFFFFFFF


# ------------------------------------------------------- java.util.Properties
_UNESCAPE = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterator[str]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_continuation(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _ends_with_continuation(line):
            line = line[:-1]
        yield line


def _ends_with_continuation(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str, what: str) -> str:
    if "\\" not in s:  # nothing escaped (almost every line): the text is the value
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(s):
            break
        c = s[i]
        if c == "u":
            hexd = s[i + 1 : i + 5]
            if len(hexd) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexd):
                raise HoodieCorruptedDataError(
                    f"Malformed \\uXXXX escape in {what}: {s!r}. Fix or restore hoodie.properties."
                )
            out.append(chr(int(hexd, 16)))
            i += 5
            continue
        out.append(_UNESCAPE.get(c, c))
        i += 1
    joined = "".join(out)
    # Re-join UTF-16 surrogate pairs written as two \u escapes.
    return joined.encode("utf-16", "surrogatepass").decode("utf-16")


def load_java_properties(text: str, what: str = "properties") -> dict[str, str]:
    """Parse ``text`` exactly as ``java.util.Properties.load`` does (insertion order kept)."""
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=: \t\f":
                break
            i += 1
        key_raw = line[:i]
        j = i
        while j < n and line[j] in " \t\f":
            j += 1
        if j < n and line[j] in "=:":
            j += 1
            while j < n and line[j] in " \t\f":
                j += 1
        out[_unescape(key_raw, what)] = _unescape(line[j:], what)
    return out


def _escape(s: str, escape_space: bool) -> str:
    out: list[str] = []
    for idx, ch in enumerate(s):
        if ch == " ":
            out.append("\\ " if (idx == 0 or escape_space) else " ")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\f":
            out.append("\\f")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            units = ch.encode("utf-16-be")
            for k in range(0, len(units), 2):
                out.append("\\u%04X" % int.from_bytes(units[k : k + 2], "big"))
        else:
            out.append(ch)
    return "".join(out)


def java_date_string(when: _dt.datetime | None = None) -> str:
    """``java.util.Date.toString()`` form (``Thu Apr 18 17:32:13 UTC 2024``), in UTC."""
    when = when or _dt.datetime.now(_dt.timezone.utc)
    when = when.astimezone(_dt.timezone.utc)
    return when.strftime("%a %b %d %H:%M:%S UTC %Y")


def dump_java_properties(
    props: Mapping[str, str], comment: str | None = None, when: _dt.datetime | None = None
) -> str:
    """Text as ``Properties.store`` writes it: ``#comment``, ``#<date>``, ``key=value`` lines."""
    lines = []
    if comment is not None:
        lines.append("#" + _escape(comment, False).replace("\\:", ":").replace("\\=", "="))
    lines.append("#" + java_date_string(when))
    for k, v in props.items():
        lines.append(f"{_escape(str(k), True)}={_escape(str(v), False)}")
    return "\n".join(lines) + "\n"


def _iso_instant(when: _dt.datetime) -> str:
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


# ------------------------------------------------------------------ TableConfig
def _as_bool(value: str | None) -> bool:
    return str(value).strip().lower() == "true"


def _as_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [p.strip() for p in value.split(",") if p.strip()]


class TableConfig(Mapping[str, str]):
    """The contents of ``hoodie.properties`` with typed accessors for what we use."""

    def __init__(self, props: Mapping[str, str] | None = None) -> None:
        self._props: dict[str, str] = {str(k): str(v) for k, v in (props or {}).items()}

    # Mapping protocol
    def __getitem__(self, key: str) -> str:
        return self._props[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._props)

    def __len__(self) -> int:
        return len(self._props)

    def __repr__(self) -> str:
        return f"TableConfig({self.table_name!r}, {self.table_type})"

    def get_or_default(self, key: str) -> str | None:
        return self._props.get(key, DEFAULTS.get(key))

    @property
    def cdc_enabled(self) -> bool:
        """Whether writers must log changes (.cdc log files) for CDC queries."""
        return _as_bool(self._props.get(CDC_ENABLED))

    @property
    def cdc_logging_mode(self) -> str:
        """The supplemental logging mode, upper case (0.14 stores it lower case)."""
        return (self._props.get(CDC_SUPPLEMENTAL_LOGGING_MODE) or "DATA_BEFORE_AFTER").strip().upper()

    def as_dict(self) -> dict[str, str]:
        return dict(self._props)

    def with_values(self, extra: Mapping[str, str]) -> "TableConfig":
        merged = dict(self._props)
        merged.update({str(k): str(v) for k, v in extra.items()})
        return TableConfig(merged)

    def without(self, *keys: str) -> "TableConfig":
        return TableConfig({k: v for k, v in self._props.items() if k not in keys})

    # typed views
    @property
    def table_name(self) -> str:
        return self._props.get(NAME, "")

    @property
    def database_name(self) -> str | None:
        return self._props.get(DATABASE_NAME)

    @property
    def table_type(self) -> str:
        return (self.get_or_default(TYPE) or COPY_ON_WRITE).upper()

    @property
    def is_mor(self) -> bool:
        return self.table_type == MERGE_ON_READ

    @property
    def record_key_fields(self) -> list[str]:
        return _as_list(self._props.get(RECORDKEY_FIELDS))

    @property
    def partition_fields(self) -> list[str]:
        # Table version 8 appends ":<type>" for the custom key generator; strip it.
        return [f.split(":")[0] for f in _as_list(self._props.get(PARTITION_FIELDS))]

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @property
    def ordering_fields(self) -> list[str]:
        """The ordering fields, compared in order (a tuple: the first decides, the next breaks its
        ties). Hudi 1.1 (table version 9) keeps them in ``hoodie.table.ordering.fields``; versions
        6 and 8 in ``hoodie.table.precombine.field``, which Hudi 1.x also reads as a list."""
        return _as_list(self._props.get(ORDERING_FIELDS)) or _as_list(self._props.get(PRECOMBINE_FIELD))

    @property
    def precombine_field(self) -> str | None:
        """The first ordering field (what a single-field reader orders by)."""
        fields = self.ordering_fields
        return fields[0] if fields else None

    @property
    def record_merge_mode(self) -> str | None:
        """``hoodie.record.merge.mode`` as written (Hudi 1.x tables; a version 6 table may carry it too)."""
        mode = (self._props.get(RECORD_MERGE_MODE) or "").strip().upper()
        return mode or None

    @property
    def initial_version(self) -> int | None:
        v = (self._props.get(INITIAL_VERSION) or "").strip()
        return int(v) if v.isdigit() else None

    @property
    def key_generator_class(self) -> str | None:
        """The key generator class: named by a version 6 table, derived from
        ``hoodie.table.keygenerator.type`` for a version 8/9 table (which names a class only
        for a user-provided generator)."""
        cls = self._props.get(KEY_GENERATOR_CLASS)
        if cls:
            return cls
        return TYPE_TO_CLASS.get((self._props.get(KEY_GENERATOR_TYPE) or "").strip().upper())

    @property
    def hive_style_partitioning(self) -> bool:
        return _as_bool(self.get_or_default(HIVE_STYLE_PARTITIONING))

    @property
    def url_encode_partitioning(self) -> bool:
        return _as_bool(self.get_or_default(URL_ENCODE_PARTITIONING))

    @property
    def base_file_format(self) -> str:
        return (self._props.get(BASE_FILE_FORMAT) or self._props.get("hoodie.table.ro.file.format") or "PARQUET").upper()

    @property
    def base_file_extension(self) -> str:
        return "." + self.base_file_format.lower()

    @property
    def log_file_format(self) -> str:
        return (self.get_or_default(LOG_FILE_FORMAT) or "HOODIE_LOG").upper()

    @property
    def timeline_layout_version(self) -> int:
        return int(self.get_or_default(TIMELINE_LAYOUT_VERSION) or 1)

    @property
    def table_version(self) -> int:
        return int(self.get_or_default(VERSION) or 6)

    @property
    def populate_meta_fields(self) -> bool:
        return _as_bool(self.get_or_default(POPULATE_META_FIELDS))

    @property
    def archivelog_folder(self) -> str:
        return self.get_or_default(ARCHIVELOG_FOLDER) or "archived"

    @property
    def payload_class(self) -> str | None:
        return self._props.get(PAYLOAD_CLASS)

    @property
    def record_merger_strategy(self) -> str | None:
        return self._props.get(RECORD_MERGER_STRATEGY) or self._props.get("hoodie.record.merge.strategy.id")

    @property
    def create_schema(self) -> str | None:
        return self._props.get(CREATE_SCHEMA)

    @property
    def timeline_timezone(self) -> str:
        return (self.get_or_default(TIMELINE_TIMEZONE) or "LOCAL").upper()

    @property
    def drop_partition_columns(self) -> bool:
        return _as_bool(self.get_or_default(DROP_PARTITION_COLUMNS))

    @property
    def partition_metafile_use_base_format(self) -> bool:
        return _as_bool(self.get_or_default(PARTITION_METAFILE_USE_BASE_FORMAT))

    @property
    def metadata_partitions(self) -> list[str]:
        return _as_list(self._props.get(METADATA_PARTITIONS))

    @property
    def checksum(self) -> int | None:
        v = self._props.get(CHECKSUM)
        return int(v) if v not in (None, "") else None

    def checksum_valid(self) -> bool:
        return self.checksum is not None and self.checksum == compute_checksum(self._props)

    # ------------------------------------------------------------------ I/O
    @classmethod
    def parse(cls, text: str, source: str = PROPERTIES_FILE) -> "TableConfig":
        """Parse and validate ``hoodie.properties`` text."""
        props = load_java_properties(text, source)
        cfg = cls(props)
        cfg.validate(source)
        return cfg

    def validate(self, source: str = PROPERTIES_FILE) -> None:
        if not self.table_name:
            raise HoodieConfigError(
                f"{source} has no {NAME}; the file is truncated or not a Hudi table config. "
                f"{_RESTORE_HINT}"
            )
        if self.table_type not in (COPY_ON_WRITE, MERGE_ON_READ):
            raise HoodieConfigError(
                f"{source}: {TYPE}={self._props.get(TYPE)!r} is not COPY_ON_WRITE or MERGE_ON_READ."
            )
        for key in (VERSION, TIMELINE_LAYOUT_VERSION, CHECKSUM):
            v = self._props.get(key)
            if v is not None and not v.strip().lstrip("-").isdigit():
                raise HoodieConfigError(f"{source}: {key}={v!r} is not a number.")
        if self.checksum is not None and not self.checksum_valid():
            raise HoodieCorruptedDataError(
                f"{source}: {CHECKSUM}={self.checksum} does not match {compute_checksum(self._props)} "
                f"computed from {DATABASE_NAME}/{NAME}; the file was partially written or edited. "
                f"Fix the table name, or {_RESTORE_HINT[0].lower()}{_RESTORE_HINT[1:]}"
            )

    @classmethod
    def load(cls, storage: Storage, base_path: str) -> "TableConfig":
        """Read ``<base>/.hoodie/hoodie.properties`` (falling back to Hudi's backup file)."""
        meta = Storage.join(base_path, ".hoodie")
        main = Storage.join(meta, PROPERTIES_FILE)
        backup = Storage.join(meta, PROPERTIES_BACKUP_FILE)
        errors: list[Exception] = []
        for path in (main, backup):
            if not storage.exists(path):
                continue
            try:
                text = storage.read_bytes(path).decode("latin-1")
                return cls.parse(text, storage.uri(path))
            except (HoodieConfigError, HoodieCorruptedDataError) as exc:
                errors.append(exc)
        if errors:
            if len(errors) > 1:  # the backup was there but bad too
                errors[0].add_note(f"{PROPERTIES_BACKUP_FILE} is unusable as well: {errors[1]}")
            raise errors[0]
        raise HoodieTableNotFoundError(
            f"no Hudi table at {storage.uri(base_path)} (missing .hoodie/{PROPERTIES_FILE}); "
            "create one by running an upsert, or check the base path."
        )

    def to_text(self, comment: str | None = None, when: _dt.datetime | None = None) -> str:
        """``hoodie.properties`` text: sorted keys, checksum recomputed and written last."""
        when = when or _dt.datetime.now(_dt.timezone.utc)
        props = {k: self._props[k] for k in sorted(self._props) if k != CHECKSUM}
        props[CHECKSUM] = str(compute_checksum(self._props))
        if comment is None:
            comment = f"Updated at {_iso_instant(when)}"
        return dump_java_properties(props, comment, when)

    def save(self, storage: Storage, base_path: str, create: bool = False) -> "TableConfig":
        """Write ``hoodie.properties`` atomically; returns the config with its checksum.

        ``create=True`` fails if a table config already exists. The header comment is
        Hudi's: ``Updated at`` if the checksum carried over is valid, else
        ``Properties saved on``.
        """
        self.validate_for_write()
        when = _dt.datetime.now(_dt.timezone.utc)
        path = Storage.join(base_path, ".hoodie", PROPERTIES_FILE)
        # Hudi's storeProperties: "Updated at" when the stored checksum is still valid,
        # otherwise the checksum is (re)computed under "Properties saved on".
        if self.checksum_valid():
            comment = f"Updated at {_iso_instant(when)}"
        else:
            comment = f"Properties saved on {_iso_instant(when)}"
        data = self.to_text(comment, when).encode("latin-1")
        if create:
            if not storage.create_if_absent(path, data):

                raise HoodieTableExistsError(
                    f"A Hudi table already exists at {storage.uri(base_path)}; load it instead of creating it."
                )
        else:
            storage.write_bytes(path, data)
        return self.with_values({CHECKSUM: str(compute_checksum(self._props))})

    def update(
        self,
        storage: Storage,
        base_path: str,
        updates: Mapping[str, str],
        deletes: tuple[str, ...] | list[str] = (),
    ) -> "TableConfig":
        """Re-read, change and rewrite ``hoodie.properties`` the way Hudi does.

        Hudi's protocol: copy the current file to ``hoodie.properties.backup``, write the
        new file, verify its checksum, delete the backup; readers fall back to the backup
        meanwhile (see :meth:`load`). Our write is atomic as well, so a reader never sees
        a partial file either way.
        """
        meta = Storage.join(base_path, ".hoodie")
        backup = Storage.join(meta, PROPERTIES_BACKUP_FILE)
        current = TableConfig.load(storage, base_path)
        storage.write_bytes(backup, current.to_text().encode("latin-1"))
        props = {k: v for k, v in current.items() if k not in set(deletes)}
        props.update({str(k): str(v) for k, v in updates.items()})
        saved = TableConfig(props).save(storage, base_path)
        reread = TableConfig.load(storage, base_path)
        if reread.checksum != saved.checksum:
            raise HoodieCorruptedDataError(
                f"hoodie.properties at {storage.uri(meta)} did not verify after the update; "
                f"the previous version is kept in {PROPERTIES_BACKUP_FILE}."
            )
        storage.delete(backup)
        return reread

    def validate_for_write(self) -> None:
        if not self.table_name:
            raise HoodieConfigError(f"{NAME} is required to write {PROPERTIES_FILE}.")
