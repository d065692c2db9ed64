"""The meta client: one object to reach a table's storage, config and timelines.

Everything above the format layer (actions, readers, operators, sensors) starts from
``HoodieTable.load(uri)`` and asks it for the timeline and the file system view, so
how a table is located and validated lives in one place.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from airflow_hoodie.config_keys.time_generator import DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS
from airflow_hoodie.errors import (
    HoodieCorruptedDataError,
    HoodieNotSupportedError,
    HoodieTableExistsError,
    HoodieTableNotFoundError,
    HoodieTimelineError,
)
from airflow_hoodie.table import properties as P
from airflow_hoodie.table.file_group.file_system_view import FileSystemView
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
)
from airflow_hoodie.table.metadata_table.damage import load_metadata_config
from airflow_hoodie.table.metadata_table.files_listing import metadata_table_path
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.supported_features import check_supported
from airflow_hoodie.table.table_format import TableFormat
from airflow_hoodie.table.timeline.archived_timeline import ArchivedTimeline
from airflow_hoodie.table.timeline.instant import Instant, new_instant_time
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_paths import METAFOLDER
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

TEMP_FOLDER = ".temp"
AUX_FOLDER = ".aux"

#: What Hudi 0.14 puts in hoodie.properties when a writer creates a version 6 table without
#: them; a version 8/9 table's creator (write_config.table_config_from_write_config) names
#: every key Hudi 1.x writes.
CREATE_DEFAULTS: dict[str, str] = {
    P.TYPE: P.COPY_ON_WRITE,
    P.VERSION: "6",
    P.TIMELINE_LAYOUT_VERSION: "1",
    P.ARCHIVELOG_FOLDER: "archived",
    P.DROP_PARTITION_COLUMNS: "false",
}


def _timeline_files(storage: Storage, meta: str) -> list[str]:
    """Names of instant files under ``.hoodie`` (v6) or ``.hoodie/timeline`` (v8+)."""
    names: list[str] = []
    for folder in (meta, Storage.join(meta, "timeline")):
        if storage.exists(folder):
            names += [f.name for f in storage.list_dir(folder)
                      if not f.is_dir and f.name[:1].isdigit() and "." in f.name]
    return sorted(names)


def refuse_unwritable_records(config: TableConfig, what: str) -> None:
    """Refuse a MERGE_ON_READ table that keeps no meta fields (``hoodie.populate.meta.fields
    =false``): its log records carry no keys, so merging them would need the key generator
    on every log block, which airflow-hoodie does not do. A COPY_ON_WRITE one is written:
    the stored rows' keys are derived from their key fields and the written meta columns
    stay null, as Hudi writes them."""
    if not config.populate_meta_fields and config.is_mor:
        raise HoodieNotSupportedError(
            f"{what} is MERGE_ON_READ with hoodie.populate.meta.fields=false (its log records would carry no record "
            "keys). airflow-hoodie writes records into tables without meta fields only when they are COPY_ON_WRITE; "
            "nothing was changed. Use a COPY_ON_WRITE table, keep the meta fields, or write this table with Hudi "
            "itself.")


class HoodieTable:
    """A Hudi table at ``base_uri``: storage, config, active and archived timeline."""

    def __init__(self, storage: Storage, base_path: str, config: TableConfig, base_uri: str | None = None,
                 clock_skew_ms: int | None = None) -> None:
        self.storage = storage
        self.base_path = base_path
        self.base_uri = base_uri or storage.uri(base_path)
        self.meta_path = Storage.join(base_path, METAFOLDER)
        self.config = config
        self._timeline: Timeline | None = None
        #: list files through the metadata table when it has a ``files`` partition (Hudi's
        #: ``hoodie.metadata.enable``): readers turn it on (Hudi's reader default); a write
        #: that keeps the metadata table plans on it (:meth:`planning_view`); table services
        #: list storage
        self.use_metadata_table = False
        #: hoodie.metadata.enable of the change in progress, set only by
        #: ``actions.commit.prepare_for_change``: None before it, so a change that skipped it
        #: cannot complete beside a metadata table
        self.metadata_enabled: bool | None = None
        #: the metadata-table settings of the change in progress (``settings.metadata_table.
        #: MetadataTableSettings``), set only by ``actions.commit``
        self.metadata_settings: Any = None
        #: the expected clock skew its instant times wait out: the change's (set by
        #: ``actions.commit``), or its data table's for a metadata table; None: Hudi's default
        self.clock_skew_ms = clock_skew_ms
        #: the storage options it was opened with: the table lock and the services' tasks
        #: reach the same store with them (an S3 endpoint, a region)
        self.storage_options: dict[str, Any] = {}
        #: the last view :meth:`write_view` gave: the next one shares its listing when the
        #: table did not change in between
        self._write_view: FileSystemView | None = None

    # ------------------------------------------------------------ construction
    @classmethod
    def load(cls, base_uri: str, storage_options: Mapping[str, Any] | None = None) -> "HoodieTable":
        """Open an existing table; :class:`HoodieTableNotFoundError` if there is none."""
        storage, path = Storage.for_uri(base_uri, storage_options)
        main = Storage.join(path, METAFOLDER, P.PROPERTIES_FILE)
        backup = Storage.join(path, METAFOLDER, P.PROPERTIES_BACKUP_FILE)
        if not storage.exists(main) and not storage.exists(backup):
            instants = _timeline_files(storage, Storage.join(path, METAFOLDER))
            if instants:
                raise HoodieCorruptedDataError(
                    f"{storage.uri(main)} is missing, but the table's timeline holds {len(instants)} instant "
                    f"files (e.g. {instants[0]}): this is a Hudi table that lost its configuration. Restore "
                    "hoodie.properties from a copy of the table (or the writer that created it); nothing was "
                    "written, so the table is not re-created with this job's defaults.")
            raise HoodieTableNotFoundError(
                f"no Hudi table at {base_uri} (missing .hoodie/hoodie.properties); "
                "create one by running an upsert, or check the base path."
            )
        config = TableConfig.load(storage, path)
        if not storage.exists(main):
            # Hudi recovers a properties update that died between its two renames the same way
            storage.write_bytes(main, storage.read_bytes(backup))
        table = cls(storage, path, config, base_uri)
        table.storage_options = dict(storage_options or {})
        return table

    @classmethod
    def exists(cls, base_uri: str, storage_options: Mapping[str, Any] | None = None) -> bool:
        storage, path = Storage.for_uri(base_uri, storage_options)
        return storage.exists(Storage.join(path, METAFOLDER, P.PROPERTIES_FILE))

    @classmethod
    def create(
        cls,
        base_uri: str,
        properties: Mapping[str, str],
        storage_options: Mapping[str, Any] | None = None,
    ) -> "HoodieTable":
        """Initialise ``.hoodie`` and ``hoodie.properties`` (Hudi's defaults filled in).

        If a table already exists with the same name and type it is returned as is;
        with different ones, :class:`HoodieTableExistsError`.
        """
        storage, path = Storage.for_uri(base_uri, storage_options)
        # not a branch on behaviour: CREATE_DEFAULTS are version 6's own keys (they name version 6),
        # which a version 8/9 creator spells out itself
        props = dict(CREATE_DEFAULTS) if str(properties.get(P.VERSION, "6")) == "6" else {}
        props.update({str(k): str(v) for k, v in properties.items()})
        new_cfg = TableConfig(props)
        new_cfg.validate_for_write()
        new_cfg.validate()
        refuse_unwritable_records(new_cfg, f"The new table at {base_uri}")
        if storage.exists(Storage.join(path, METAFOLDER, P.PROPERTIES_FILE)):
            existing = cls.load(base_uri, storage_options)
            cls._check_compatible(existing, new_cfg)
            return existing
        meta = Storage.join(path, METAFOLDER)
        for sub in (TEMP_FOLDER, AUX_FOLDER, new_cfg.archivelog_folder):
            storage.mkdirs(Storage.join(meta, sub))
        try:
            saved = new_cfg.save(storage, path, create=True)
        except HoodieTableExistsError:
            existing = cls.load(base_uri, storage_options)
            cls._check_compatible(existing, new_cfg)
            return existing
        return cls(storage, path, saved, base_uri)

    @staticmethod
    def _check_compatible(existing: "HoodieTable", wanted: TableConfig) -> None:
        clashes = []
        for key in (P.NAME, P.TYPE, P.RECORDKEY_FIELDS, P.PARTITION_FIELDS):
            if key in wanted and existing.config.get(key, P.DEFAULTS.get(key)) != wanted[key]:
                clashes.append(f"{key}: table has {existing.config.get(key)!r}, requested {wanted[key]!r}")
        if clashes:
            raise HoodieTableExistsError(
                f"A Hudi table already exists at {existing.base_uri} with different settings ("
                + "; ".join(clashes)
                + "). Use another path or match the existing table's settings."
            )

    # --------------------------------------------------------------- accessors
    @property
    def table_type(self) -> str:
        return self.config.table_type

    @property
    def is_mor(self) -> bool:
        return self.config.is_mor

    @property
    def table_name(self) -> str:
        return self.config.table_name

    @property
    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = Timeline.load(self.storage, self.base_path)
        return self._timeline

    def reload_timeline(self) -> Timeline:
        self._timeline = Timeline.load(self.storage, self.base_path)
        return self._timeline

    def new_instant_time(self, fresh: bool = True) -> str:
        """A fresh instant time for this table: its timeline time zone, after its last instant.

        Hudi uses local time unless ``hoodie.table.timeline.timezone=UTC``; forcing the
        time past the last instant on the timeline keeps instants ordered even when
        writers run on hosts with skewed clocks. ``fresh=False``: after the last instant of
        the timeline already loaded (a caller that checks the time again under the lock).
        """
        last = (self.reload_timeline() if fresh else self.timeline).last()
        return self._generate_time(last.timestamp if last else None)

    def completion_time(self, instant: Instant) -> str | None:
        """The completion time of ``instant``, taken as it completes (under the table lock
        when writers run concurrently); None on timeline layout 1, which has none.

        Hudi 1.x orders file slices and incremental reads by completion time, so it must
        not go back: it is past the instant's own time and every completion this table's
        loaded timeline has seen."""
        if not self.format.has_completion_times:
            return None
        done = self.timeline.completion_times().values()
        return self._generate_time(max([instant.timestamp, *done]))

    def _generate_time(self, after: str | None) -> str:
        """A time past ``after``; on Hudi 1.x tables it then waits out the expected clock skew
        (Hudi's SkewAdjustingTimeGenerator), so a writer whose clock lags by up to
        ``hoodie.time.generator.max_expected_clock_skew_ms`` still takes a later time."""
        ts = new_instant_time(utc=self.config.timeline_timezone == "UTC", after=after, table=self.base_uri)
        if self.format.waits_out_clock_skew:
            skew_ms = self.expected_clock_skew_ms()
            if skew_ms > 0:
                time.sleep(skew_ms / 1000.0)
        return ts

    def expected_clock_skew_ms(self) -> int:
        """``hoodie.time.generator.max_expected_clock_skew_ms`` of the change in progress (or
        the one this table was opened with)."""
        return DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS if self.clock_skew_ms is None else self.clock_skew_ms

    def check_supported(self) -> None:
        """Refuse a table using a feature we do not handle (format, merger, bootstrap ...)
        before anything reads or changes it; see :mod:`supported_features`."""
        check_supported(self.config, self.timeline.timestamps, f"The table at {self.base_uri}")

    #: (the config it was resolved from, the format): resolved again only when the config
    #: object changes (:meth:`reload_config`, :meth:`update_config`, a caller assigning one)
    _resolved_format: tuple[TableConfig, TableFormat] | None = None

    @property
    def format(self) -> TableFormat:
        """The table's version and timeline layout, resolved once from its config; every
        version-dependent choice is asked of it."""
        resolved = self._resolved_format
        if resolved is None or resolved[0] is not self.config:
            resolved = self._resolved_format = (self.config, TableFormat.of(self.config))
        return resolved[1]

    def timeline_writer(self) -> TimelineWriter:
        """The one writer of this table's instant files, in its version's timeline layout."""
        return self.format.timeline_writer(self.storage, self.base_path)

    def check_writable(self) -> None:
        """Refuse to change a table of a version we only read (5) or do not know (7, 10, ...)."""
        self.check_supported()
        self.format.check_writable(f"The table at {self.base_uri}")

    def check_records_writable(self, what: str) -> None:
        """Refuse to write records into a table we cannot keep true (see
        :func:`refuse_unwritable_records`)."""
        refuse_unwritable_records(self.config, f"{what}: the table at {self.base_uri}")

    def check_no_pending_restore(self) -> None:
        """A restore killed half way leaves a table that is neither before nor after it
        (some instants undone, some not); a change built on it would keep that state, and
        the restore could never finish (Hudi refuses every commit then, too)."""
        pending = [i for i in self.reload_timeline().instants if i.action == "restore" and not i.is_completed]
        if pending:
            raise HoodieTimelineError(
                f"The restore {pending[0].timestamp} of {self.base_uri} did not finish: the table is half restored. "
                "Run the restore again (spark_jobs/savepoint.py --restore, or restore_to, with the same instant); it "
                "resumes its plan. Nothing was changed.")

    def check_latest_commit(self) -> None:
        """The latest completed write must carry readable commit metadata: an empty,
        truncated or garbage file (a writer that died while completing, a bad copy) would
        otherwise be read as "no data" and every later write would build on it."""

        last = self.timeline.completed_commits().last()
        if last is None:
            return
        path = self.timeline.instant_path(last)
        try:
            data = self.timeline.read_details(last)
            if not data.strip():
                raise ValueError("the file is empty")
            (ReplaceCommitMetadata if last.action == "replacecommit" else CommitMetadata).from_json(data)
        except (ValueError, HoodieCorruptedDataError, UnicodeDecodeError) as exc:
            raise HoodieCorruptedDataError(
                f"The latest commit file {self.storage.uri(path)} is unreadable ({exc}): the write that "
                f"completed {last.timestamp} died while writing it, or the file was damaged. Nothing was read or "
                "written. Restore the file from a backup; or, if that write should be undone, delete this one "
                "file: the instant becomes pending again and, once its heartbeat window has passed (2 minutes by "
                "default), the next write (or clean, with LAZY failed-write cleaning) rolls it back.") from exc

    def update_config(self, updates: Mapping[str, str], deletes: tuple[str, ...] = ()) -> TableConfig:
        """Change ``hoodie.properties`` (e.g. metadata partitions) with Hudi's backup protocol."""
        self.config = self.config.update(self.storage, self.base_path, updates, deletes)
        return self.config

    def reload_config(self) -> TableConfig:
        self.config = TableConfig.load(self.storage, self.base_path)
        return self.config

    def archived_timeline(self) -> ArchivedTimeline:
        """The archived instants, where the table's timeline layout keeps them."""
        return self.format.archived_timeline(self.storage, self.base_path)

    def metadata_table(self) -> HoodieTable:
        """The metadata table as a table of its own (MERGE_ON_READ, HFile base files), built from
        its own ``.hoodie/metadata/.hoodie/hoodie.properties``, as hudi-rs's
        ``new_metadata_table()`` does. Its instants are taken under this table's lock and wait
        out this change's expected clock skew (Hudi 1.x tables), passed to it explicitly."""
        path = metadata_table_path(self.base_path)
        return HoodieTable(self.storage, path, load_metadata_config(self.storage, path),
                           clock_skew_ms=self.expected_clock_skew_ms())

    def file_system_view(self, timeline: Timeline | None = None,
                         through_metadata_table: bool | None = None) -> FileSystemView:
        """The file groups of this table as seen through ``timeline`` (default: the active one).

        ``through_metadata_table`` (default :attr:`use_metadata_table`) lists files from the
        metadata table's ``files`` partition, when the table has one, instead of storage."""
        via_mdt = self.use_metadata_table if through_metadata_table is None else through_metadata_table
        return FileSystemView(self.storage, self.base_path, timeline if timeline is not None else self.timeline,
                              self.config, via_mdt)

    def write_view(self, through_metadata_table: bool) -> FileSystemView:
        """The view a write checks when it loads the table and plans on once its instant
        exists (:meth:`planning_view`), on the current timeline: the metadata table's files
        partition is read once for both while no instant completes in between
        (:meth:`FileSystemView.seen_through`)."""
        last = self._write_view
        if last is not None and last.use_metadata_table == through_metadata_table:
            view = last.seen_through(self.timeline, self.config)
        else:
            view = self.file_system_view(through_metadata_table=through_metadata_table)
        self._write_view = view
        return view

    def loaded_view(self, through_metadata_table: bool) -> FileSystemView:
        """The view the write checked when it loaded the table, as it was (no second listing):
        what a check before the write's instant exists looks at; a new one when there is none."""
        last = self._write_view
        if last is not None and last.use_metadata_table == through_metadata_table:
            return last
        return self.write_view(through_metadata_table)

    def planning_view(self) -> FileSystemView:
        """The view a write plans on (index scope, small files, log versions).

        A write that keeps the metadata table true lists through it, as Hudi's writers do:
        on an object store a storage listing costs a LIST request per partition, which is
        what the metadata table exists to remove. Its ``files`` partition is checked against
        the timeline (a stale one is refused), and the files of the slices the write plans on
        are asked of storage, one HEAD each (:meth:`FileSystemView.check_on_storage`), so a
        file deleted behind the table stops the write by name.
        Table services, rollback and restore keep listing storage: they delete files and
        must see every one, committed or not."""
        return self.write_view(bool(self.metadata_enabled))

    def partition_dir(self, partition_path: str) -> str:
        return Storage.join(self.base_path, partition_path) if partition_path else self.base_path

    def relative_path(self, path: str) -> str:
        """``path`` relative to the base path (as commit metadata records file paths)."""
        prefix = self.base_path.rstrip("/") + "/"
        return path[len(prefix):] if path.startswith(prefix) else path

    @property
    def temp_path(self) -> str:
        return Storage.join(self.meta_path, TEMP_FOLDER)

    @property
    def aux_path(self) -> str:
        return Storage.join(self.meta_path, AUX_FOLDER)

    @property
    def history_path(self) -> str:
        """Where a timeline layout 2 table archives (``.hoodie/timeline/history`` by default)."""
        return self.format.history_path(self.meta_path)

    @property
    def archive_path(self) -> str:
        return Storage.join(self.meta_path, self.config.archivelog_folder)

    def __repr__(self) -> str:
        return f"HoodieTable({self.base_uri!r}, {self.table_name!r}, {self.table_type})"
