"""The Hudi write client, driver side: the timeline steps of one write.

Hudi's SparkRDDWriteClient: roll back failed earlier writes, create the requested
instant, move it inflight with the workload profile, and complete it with the commit
metadata after reconciling markers and checking conflicts under the lock. It never
touches records itself.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.file_group_write import FileGroupTask
from airflow_hoodie.actions.rollback import discard_after_rollback, discard_dead_child_groups, rollback_instant
from airflow_hoodie.actions.transaction.conflict_resolution import (
    check_dual_write_targets,
    TimelineSnapshot,
    check_no_conflict,
)
from airflow_hoodie.actions.transaction.failed_writes import (
    failed_writes,
    live_writes,
    rollback_failed_writes,
)
from airflow_hoodie.actions.transaction.nbcc import needs_conflict_check
from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.actions.write_config import (
    OPERATION_TYPE,
    PARTITION_FIELD,
    PRECOMBINE_FIELD,
    RECORD_KEY_FIELD,
    TABLE_TYPE,
    table_config_from_write_config,
)
from airflow_hoodie.actions.write_settings import WriteRequest
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.concurrency import (
    CONCURRENCY_MODE,
    EAGER,
    OCC,
    SINGLE_WRITER,
)
from airflow_hoodie.errors import (
    HoodieConcurrentWriterError,
    HoodieConfigError,
    HoodieIOError,
    HoodieTableNotFoundError,
    HoodieWriteConflictError,
)
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.cdc_block import is_cdc_log_name
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
    WriteStat,
)
from airflow_hoodie.table.schema.table_schema import CREATE_SCHEMA, latest_avro_schema
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.supported_features import check_merge_supported
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    new_instant_time,
)


def commit_metadata(
    stats: Sequence[Mapping[str, Any]],
    operation: str,
    schema_json: str | None,
    replaced: Mapping[str, list[str]] | None = None,
    extra: Mapping[str, str] | None = None,
    compacted: bool = False,
) -> CommitMetadata:
    """HoodieCommitMetadata / HoodieReplaceCommitMetadata of a write or service; the table
    serializes it for its version when the instant completes."""
    extra_md = dict(extra or {})
    if schema_json is not None:
        extra_md["schema"] = schema_json
    meta = CommitMetadata() if replaced is None else ReplaceCommitMetadata(
        partition_to_replace_file_ids={k: list(v) for k, v in replaced.items()})
    for st in stats:
        meta.add_write_stat(st.get("partitionPath") or "", WriteStat.from_dict(st))
    meta.compacted = compacted
    meta.extra_metadata = extra_md
    meta.operation_type = OPERATION_TYPE.get(operation, operation)
    return meta


def workload_profile(tasks: Sequence[FileGroupTask], operation: str,
                     extra: Mapping[str, str] | None = None) -> CommitMetadata:
    """What Hudi puts in the inflight file: one stat per bucket with expected counts (the
    stats' own partitionPath stays null, as Hudi's WorkloadProfile leaves it)."""
    meta = CommitMetadata(extra_metadata=dict(extra or {}), operation_type=OPERATION_TYPE.get(operation, operation))
    for t in tasks:
        update = t.kind == "UPDATE"
        meta.add_write_stat(t.partition_path, WriteStat.new(
            fileId=t.file_id if update else "", prevCommit=t.prev_commit if update else "null",
            numUpdateWrites=t.expected_records if update else 0, numInserts=0 if update else t.expected_records))
    return meta


@dataclass
class WriteResult:
    instant: str
    action: str
    state: str
    operation: str
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    files_written: int = 0
    bytes_written: int = 0
    partitions: int = 0
    rolled_back: list[str] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)
    replaced_file_groups: int = 0
    #: Hudi 1.x: when the commit completed; None on version 6, whose timeline has no completion times
    completion_time: str | None = None

    @property
    def checkpoint(self) -> str:
        """What a downstream incremental reader passes as ``start`` to go on after this commit
        (:attr:`Instant.checkpoint`)."""
        return self.completion_time or self.instant

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "checkpoint": self.checkpoint}


def check_unknown_keys(config: HoodieConfig) -> list[str]:
    """Every hoodie.* key nobody registered; callers report them (typos must not pass silently)."""
    return config.unknown_keys()


class WriteClient:
    """Driver side of one write: owns the timeline steps, never touches records itself."""

    def __init__(self, base_uri: str, config: HoodieConfig, storage_options: Mapping[str, str] | None = None,
                 table_name: str | None = None, request: WriteRequest | None = None) -> None:
        """The write's entry point in ``actions``: ``config`` is the job's options, parsed here
        once into the settings every step takes (lock, commit options, metadata table);
        ``request`` the operation and table type the job asked for, when it checked them
        already (:class:`WriteRequest`)."""
        config.check_spellings_agree()  # two spellings of the ordering field that disagree: refused (C27)
        self.base_uri = base_uri
        self.config = config
        self.storage_options = dict(storage_options or {})
        self.request = request or WriteRequest.from_config(config)
        self.table_name = table_name or self.request.table_name
        #: the write's lock, commit options and metadata-table settings, parsed once
        self.action = ActionSettings.from_config(config)
        self.lock = self.action.lock
        self.storage, self.base_path = Storage.for_uri(base_uri, self.storage_options or None)
        self.table: HoodieTable | None = None
        self._txn: TransactionManager | None = None
        self._started: TimelineSnapshot | None = None
        #: (partition, child file id) -> clustering instant: the child groups of pending
        #: consistent-hashing resizes this write dual-writes into (set by the write flow once
        #: it has routed its records); checked at commit, cleaned up on abort
        self.dual_writes: dict[tuple[str, str], str] = {}

    def request_for(self, operation: str) -> WriteRequest:
        """The job's request for ``operation``: the one it checked, else checked now."""
        self.request = self.request.for_operation(operation)
        return self.request

    @property
    def txn(self) -> TransactionManager:
        """Concurrency mode, heartbeats and lock of this table for this client."""
        if self._txn is None:
            self._txn = TransactionManager(self.lock, self.base_uri, self.storage, self.base_path,
                                           self.storage_options)
        return self._txn

    # ---------------------------------------------------------------- table
    def load_table(self) -> HoodieTable | None:
        # a custom payload or merger in the job's own options: refused before anything is written
        check_merge_supported(self.config.as_dict(), f"The write to {self.base_uri}")
        try:
            self.table = HoodieTable.load(self.base_uri, self.storage_options or None)
            # the write's settings from the start: its first instant time already honours
            # hoodie.time.generator.max_expected_clock_skew_ms
            commit.use_change_settings(self.table, self.action.change)
        except HoodieTableNotFoundError:
            self.table = None
        if self.table is not None:
            self.table.check_writable()
            self.table.check_records_writable("This write")
            self.table.check_latest_commit()
            self._check_table_matches()
            # a write planned on a view missing a latest file would make the older data permanent
            # (checked on the view it plans on: storage, or the metadata table it keeps)
            self.table.write_view(self.action.change.metadata is not None).check_latest_files_present()
        return self.table

    def _check_table_matches(self) -> None:
        want = self.request.table_type
        if self.request.table_type_named:
            if want != self.table.table_type:
                raise HoodieConfigError(
                    f"The table at {self.base_uri} is {self.table.table_type}, but the write asks for {want}; "
                    "drop hoodie.table.type or write to a new path.")

    def effective_config(self) -> HoodieConfig:
        """Write settings with the table's own key/partition/precombine fields filling the gaps."""
        if self.table is None:
            return self.config
        tc = self.table.config
        extra: dict[str, str] = {}
        mapping = {
            RECORD_KEY_FIELD: ",".join(tc.record_key_fields or []),
            PARTITION_FIELD: ",".join(tc.partition_fields or []),
            "hoodie.datasource.write.keygenerator.class": tc.key_generator_class or "",
            "hoodie.datasource.write.hive_style_partitioning": str(tc.hive_style_partitioning).lower(),
            TABLE_TYPE: self.table.table_type,
        }
        if tc.precombine_field:
            mapping[PRECOMBINE_FIELD] = tc.precombine_field
        for k, v in mapping.items():
            if k not in self.config and v:
                extra[k] = v
        return self.config.with_values(extra)

    def create_table(self, avro_schema: Mapping[str, Any]) -> HoodieTable:
        if not self.table_name:
            raise HoodieConfigError("Creating a table needs a name: pass --table-name or hoodie.table.name.")
        props = table_config_from_write_config(self.config, self.table_name, avro_schema, self.request.table_type)
        self.table = HoodieTable.create(self.base_uri, props, self.storage_options or None)
        commit.use_change_settings(self.table, self.action.change)
        return self.table

    @property
    def is_mor(self) -> bool:
        return self.table is not None and self.table.table_type == "MERGE_ON_READ"

    def commit_action(self, operation: str) -> str:
        if operation in ("insert_overwrite", "insert_overwrite_table"):
            return Action.REPLACE_COMMIT
        return Action.DELTA_COMMIT if self.is_mor else Action.COMMIT

    # ------------------------------------------------------------ schema
    def table_avro_schema(self) -> dict[str, Any] | None:
        """The table's current schema (None before the table exists)."""
        if self.table is None:
            return None
        return latest_avro_schema(self.table.timeline, self.table.config.get(CREATE_SCHEMA))

    # ------------------------------------------------------------ timeline
    def rollback_failed_writes(self) -> list[str]:
        """Before a write: a single writer refuses to run beside a live one; failed writes
        (heartbeat expired) are rolled back now under EAGER, by clean under LAZY."""
        if self.table is None:
            return []
        # the timeline the write loaded: whatever started since is live, and whatever is
        # decided here is decided again under the lock (and start checks again)
        tm = self.txn
        if not tm.is_multi_writer:
            self._refuse_beside_live_writer()
        if tm.failed_writes_policy == EAGER:
            if failed_writes(self.table, tm):
                # a rollback changes the table: set up as a write would be, or the metadata
                # table misses the log files a failed v6 MERGE_ON_READ write leaves listed
                commit.prepare_for_change(self.table, self.action.change)
            return rollback_failed_writes(self.table, tm)
        return []

    def _refuse_beside_live_writer(self, own: str | None = None) -> None:
        """SINGLE_WRITER: stop when another pending write has a live heartbeat."""
        live = live_writes(self.table, self.txn, exclude=own)
        if live:
            other = live[0]
            raise HoodieConcurrentWriterError(
                f"Another writer is running on {self.base_uri}: {other.action} {other.timestamp} is pending "
                f"and its heartbeat is live. {CONCURRENCY_MODE} is {SINGLE_WRITER}, so this write stops before "
                f"touching anything. Either run the table's write tasks one at a time (an Airflow pool with one "
                f"slot for this table), or let them overlap safely with {CONCURRENCY_MODE}={OCC} and a lock "
                "provider (hoodie.write.lock.provider).")

    def new_instant_time(self) -> str:
        """The table's next instant time (its time zone, after its last instant)."""
        if self.table is not None:
            # start() takes a later one under the lock when another writer took this time
            return self.table.new_instant_time(fresh=False)

        return new_instant_time(utc=self.request.timeline_utc, table=self.base_uri)

    def start(self, instant_time: str, action: str, operation: str) -> str:
        """Create our requested instant and start its heartbeat; returns the instant time
        actually used (with optimistic concurrency a later one when another writer took it)."""
        content = b""
        if action == "replacecommit":
            content = _requested_replace_metadata(operation)
        if self.table is not None:
            commit.prepare_for_change(self.table, self.action.change)
        with self.txn.transaction("start a write"):
            if self.table is not None and self.txn.is_multi_writer:
                # under the lock no other instant can take this time (Hudi 1.x does the same);
                # NBCC takes it here always, after the clock skew wait, as Hudi's writers do: a
                # compaction planned meanwhile must be older than every write requested after it
                last = self.table.reload_timeline().last()
                if self.txn.is_nbcc or (last is not None and instant_time <= last.timestamp):
                    instant_time = self.new_instant_time()
            if self.table is not None:
                commit.ensure_metadata_table(self.table)
            # the heartbeat first, as Hudi's startCommit does: a pending write without one
            # is judged failed, so it must exist before the instant does
            self.txn.heartbeats.start(instant_time)
            try:
                self.table.timeline_writer().create_requested(
                    Instant(instant_time, action, State.REQUESTED), content)
            except BaseException:
                self.txn.heartbeats.stop(instant_time)
                raise
        # Plan on the timeline as it is now that our instant exists: a compaction or
        # clustering scheduled meanwhile is seen, and anything completing later is checked
        # for conflicts at commit.
        if self.table is not None:
            self._started = TimelineSnapshot.of(self.table.reload_timeline())
            if not self.txn.is_multi_writer:
                # Without a lock two writers can both pass the check before either exists:
                # checked again now that ours is visible; at worst both stop, never both run.
                try:
                    self._refuse_beside_live_writer(own=instant_time)
                except HoodieConcurrentWriterError:
                    # a rollback, not a silent delete: a writer that saw our instant pending
                    # must learn it was undone, or its conflict check takes it for archived
                    self.abort(instant_time)
                    raise
        return instant_time

    def inflight(self, instant_time: str, action: str, tasks: Sequence[FileGroupTask], operation: str) -> None:
        self.table.timeline_writer().transition_to_inflight(
            Instant(instant_time, action, State.REQUESTED),
            self.table.format.encode_inflight(action, workload_profile(tasks, operation, dict(self.action.extra_metadata))))

    def commit(self, instant_time: str, action: str, operation: str, stats: Sequence[Mapping[str, Any]],
               avro_schema: Mapping[str, Any], replaced: Mapping[str, list[str]] | None = None,
               bucket_scope: bool = False) -> Instant:
        """Reconcile against markers, write partition metadata, complete the instant, drop markers.
        Returns the completed instant, with its completion time on Hudi 1.x. ``bucket_scope``: a
        bucket-index write, whose conflicts are judged per (partition, bucket)."""
        written = {st["path"] for st in stats if st.get("path")} | {p for st in stats for p in st.get("cdcStats") or {}}
        for m in mk.list_markers(self.storage, self.base_path, instant_time):
            # a CDC log is written whole by one task, like a base file: a retry's copy is a duplicate
            if (m.io_type in (mk.IO_CREATE, mk.IO_MERGE) or is_cdc_log_name(m.data_path)) and m.data_path not in written:
                # a retried or speculative task left a duplicate file: Hudi deletes it before commit
                self.storage.delete(self.storage.join(self.base_path, m.data_path))
        # three requests per partition on an object store: asked side by side, not in turn
        self.storage.side_by_side(lambda part: write_partition_metadata(self.storage, self.base_path, part, instant_time),
                                  sorted({st.get("partitionPath") or "" for st in stats}))
        schema_json = json.dumps(avro_schema, separators=(",", ":"))
        meta = commit_metadata(stats, operation, schema_json, replaced, dict(self.action.extra_metadata))
        own = Instant(instant_time, action, State.INFLIGHT)
        groups = {(st.get("partitionPath") or "", st["fileId"]) for st in stats if st.get("fileId")}
        groups |= {(p, f) for p, ids in (replaced or {}).items() for f in ids}

        def pre_commit() -> None:  # under the lock
            if self._started is not None:
                timeline = self.table.reload_timeline()
                current = timeline.get(instant_time, action)
                if current is None or current.is_completed:
                    raise HoodieWriteConflictError(
                        f"{action} {instant_time} was rolled back by another task while it ran (its heartbeat "
                        "was judged expired); nothing of it is visible. A retry of this task redoes it cleanly; "
                        "if this repeats, raise hoodie.client.heartbeat.interval_in_ms / tolerable.misses.")
                # every mode, NBCC too: a rolled-back resize's child logs are never committed
                check_dual_write_targets(timeline, own, self.dual_writes)
                if needs_conflict_check(self.lock, operation):  # NBCC writers do not conflict
                    check_no_conflict(timeline, own, groups, self._started, bucket_scope)
            self.txn.ensure_lock_held()  # a lock lost meanwhile must stop us before, never after

        with self.txn.transaction(f"commit {instant_time}"):
            try:
                done = commit.complete(self.table, own, meta, pre_commit)
            except HoodieWriteConflictError:
                # still under the lock: the rollback's metadata-table delta commit and the
                # services it runs must not interleave with another writer's (Hudi's writers
                # roll an aborted write back inside the same transaction)
                self.abort(instant_time)
                raise
        self.txn.heartbeats.stop(instant_time)
        mk.delete_marker_dir(self.storage, self.base_path, instant_time)
        return done

    @contextmanager
    def aborting_on_failure(self, instant_time: str) -> Iterator[None]:
        """Whatever fails between start and commit leaves nothing behind: our instant is
        rolled back and its heartbeat removed before the error propagates (a SIGKILL
        leaves it to the next writer, once the heartbeat shows the process gone)."""
        try:
            yield
        except HoodieIOError as exc:
            self._abort_keeping_cause(instant_time, exc)
            if self.txn.is_multi_writer and "does not exist" in str(exc):
                # another task (clean of replaced or old slices, a clustering) removed a file
                # this write planned on: the same situation as a failed conflict check
                raise HoodieWriteConflictError(
                    f"{exc}. A concurrent table service removed a file this write was reading; {instant_time} "
                    "was rolled back and nothing of it is visible. A retry of this task redoes it cleanly on the "
                    "current table.") from exc
            raise
        except BaseException as exc:
            self._abort_keeping_cause(instant_time, exc)
            raise

    def _abort_keeping_cause(self, instant_time: str, cause: BaseException) -> None:
        """Abort after ``cause``; when the cleanup fails too (the same full or read-only disk,
        say), the user still sees the cause first and the cleanup's failure as a note."""
        try:
            self.abort(instant_time)
        except Exception as cleanup:  # noqa: BLE001 - reported on the cause, which is re-raised
            cause.add_note(f"Rolling back {instant_time} afterwards failed too: {type(cleanup).__name__}: {cleanup}. "
                           "The next write or clean rolls it back once its heartbeat is gone.")

    def abort(self, instant_time: str) -> None:
        """Undo our own pending instant after a failure: its files go, its heartbeat stops.

        Under the table lock (the commit's own when it aborts on a conflict): the rollback
        writes the metadata table (a delta commit, the rollback of our delta commit, and the
        services those run), which another writer may be changing at the same time."""

        try:
            if self.table is not None:
                with self.txn.transaction(f"roll back {instant_time}"):
                    # first: our rollback would only append a rollback block to a version 6
                    # child log, leaving the file in a group whose resize is gone
                    discard_dead_child_groups(self.table, self.dual_writes)
                    pending = self.table.reload_timeline().get(instant_time)
                    if pending is not None and not pending.is_completed:
                        rollback_instant(self.table, instant_time, pending_only=True)
                    elif pending is None:
                        # rolled back by another task while our tasks still wrote: what they
                        # wrote after that rollback is ours to remove
                        discard_after_rollback(self.table, instant_time)
        finally:
            self.txn.heartbeats.stop(instant_time)


def _requested_replace_metadata(operation: str) -> bytes:

    return avro_codec.serialize("HoodieRequestedReplaceMetadata", {
        "operationType": OPERATION_TYPE.get(operation, operation), "clusteringPlan": None,
        "extraMetadata": {}, "version": 1})

