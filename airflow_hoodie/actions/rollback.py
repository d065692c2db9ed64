"""Rollback of a write instant: plan (Avro HoodieRollbackPlan) -> inflight -> ``.rollback``.

A failed write leaves a pending instant plus whatever files its tasks managed to create.
The markers under ``.hoodie/.temp/<instant>/`` name every such file (created before the
file), so the plan deletes created/merged base files and, for log files the write
appended to, appends a rollback command block (readers then skip the failed blocks).
On table version 8+ a log file holds one instant's blocks (its name carries that instant,
see ``log_file_layout``), so the failed instant's log files are deleted like base files
and no command block is written, as Hudi 1.x does. Without markers we fall back to
listing files whose name carries the instant. The
plan lives in ``.rollback.requested``, so a rollback killed half way is finished by
running it again. Also used by the services (e.g. a failed compaction or clustering).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.metadata_compaction import (
    merged_by_compaction,
)
from airflow_hoodie.actions.metadata_table.metadata_writer import update_files_partition
from airflow_hoodie.actions.metadata_table.record_index_writer import (
    record_index_change,
)
from airflow_hoodie.actions.metadata_table.secondary_index_writer import (
    secondary_index_change,
)
from airflow_hoodie.actions.rollback_identity import (
    RollbackRecord,
    record_rollback,
    recorded_rollback,
)
from airflow_hoodie.actions.transaction.failed_writes import live_writes
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.actions.transaction.transaction_manager import ensure_locks_held
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConcurrentWriterError,
    HoodieError,
    HoodieTimelineError,
)
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.consistent_hashing import plan_child_nodes
from airflow_hoodie.table.file_group.file_naming import (
    log_file_name,
    parse_base_file_name,
    make_write_token,
    parse_log_file_name,
)
from airflow_hoodie.table.hashing_metadata_store import delete_resize_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log import log_block as lb
from airflow_hoodie.table.log.cdc_block import is_cdc_log_name
from airflow_hoodie.table.log.log_block import serialize_block
from airflow_hoodie.table.log.log_reader import read_log_blocks
from airflow_hoodie.table.log.log_writer import latest_log_file
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata_table.files_change import files_change
from airflow_hoodie.table.metadata_table.files_listing import files_partition_ready
from airflow_hoodie.table.metadata_table.partitions import has_metadata_table
from airflow_hoodie.table.metadata_table.record_index import has_record_index
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.replace_kind import is_clustering_requested

#: the metadata table's rollback of a data rollback's target is this suffix after its time
METADATA_ROLLBACK_SUFFIX = "006"
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit", "compaction", "logcompaction")


def is_rollbackable_pending_write(table: HoodieTable, instant: Any) -> bool:
    """Pending commit/deltacommit, or a replacecommit that is not a clustering plan.

    Pending compactions and clustering are plans that must be *re-executed*, never
    rolled back by a writer (Hudi leaves them to the table services).
    """
    if instant.action in ("commit", "deltacommit"):
        return True
    if instant.action == "replacecommit":

        try:
            data = table.timeline.read_details(instant.requested())
        except HoodieTimelineError:
            data = b""  # an insert_overwrite that died before its requested file: a failed write
        return not is_clustering_requested(data)
    return False


def _files_from_listing(table: HoodieTable, instant_time: str) -> list[tuple[str, str, str]]:
    """(partition, name, io_type) of files carrying ``instant_time`` (no markers): base
    files, and on table version 8+ the log files the instant named (its own)."""
    view = table.file_system_view()
    found = [(bf.partition_path, bf.file_name, mk.IO_CREATE) for bf in view.base_files_written_at(instant_time)]
    if table.format.log_file_layout.names_logs_by_write_instant:
        found.extend((lf.partition_path, lf.file_name, mk.IO_APPEND)
                     for fg in view.all_file_groups() for lf in fg.all_log_files()
                     if lf.base_instant == instant_time)
    else:  # a CDC table's .cdc logs carry the instant that wrote them on every version
        found.extend((lf.partition_path, lf.file_name, mk.IO_CREATE)
                     for fg in view.all_file_groups() for lf in fg.all_log_files()
                     if lf.suffix and lf.base_instant == instant_time)
    return found


def _resize_children_files(table: HoodieTable, instant_time: str) -> list[tuple[str, str, str]]:
    """(partition, name, io_type) of every file in the child groups of a consistent-hashing
    resize ``instant_time`` (none for any other instant).

    Writes under the duplicate update strategy put logs in those groups while the resize is
    pending (:mod:`consistent_bucket_write`); their markers are the writes', not the
    clustering's, so Hudi's marker- and listing-based rollbacks leave them. Every such record is
    also in an old group, which the rollback keeps: left behind, a table version 8+ view slices
    them by completion time into a visible log-only group (rows read twice) and the ring loader
    would take the groups for a committed resize. The groups are new (their ids are fresh
    prefixes of the plan's child nodes), so all their files go with the clustering."""
    tl = table.reload_timeline()
    if tl.get(instant_time, Action.REPLACE_COMMIT) is None and tl.get(instant_time, Action.CLUSTERING) is None:
        return []
    children = plan_child_nodes(table.file_system_view(tl).clustering_plan(instant_time))
    out = []
    for part, (_seq, nodes) in sorted(children.items()):
        ids = {n.file_id for n in nodes}
        folder = table.partition_dir(part)
        for e in table.storage.list_dir(folder) if ids and table.storage.exists(folder) else []:
            parsed = None if e.is_dir else (parse_log_file_name(e.name) or parse_base_file_name(e.name))
            if parsed is not None and parsed.file_id in ids:
                out.append((part, e.name, mk.IO_CREATE))
    return out


def _drop_resize_rings(table: HoodieTable, target: str) -> None:
    """A consistent-hashing resize rolled back (pending, or completed: by the rollback job or a
    restore) takes its rings with it: each partition's ``<target>.hashing_meta`` (seqNo + 1)
    and ``.commit`` marker are deleted, so the ring the resize was planned on is the latest
    again. Left there, a completed resize's marker keeps the loader on the new ring, which routes
    keys to child groups this rollback deletes while the old groups, visible again, hold them
    (duplicates, lost updates). Hudi's rollbackCommit of the consistent bucket index does
    nothing here, and its loader would keep that ring too; with the files gone both loaders
    agree on the previous ring. Done after the target is reverted to inflight (the loader's
    fix-up never re-marks a pending instant's ring) and before its plan's files go, while the
    plan still names the partitions; a resumed rollback repeats it."""
    tl = table.reload_timeline()
    if tl.get(target, Action.REPLACE_COMMIT) is None and tl.get(target, Action.CLUSTERING) is None:
        return
    for part in sorted(plan_child_nodes(table.file_system_view(tl).clustering_plan(target))):
        delete_resize_metadata(table.storage, table.base_path, part, target)


def make_rollback_plan(table: HoodieTable, instant_time: str, action: str,
                       appended: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """HoodieRollbackPlan record for the instant (as a dict ready for the Avro codec).
    ``appended``: (partition, log file name) the instant is known to have appended to."""
    storage, base_path = table.storage, table.base_path
    markers = mk.list_markers(storage, base_path, instant_time)
    entries = ([(m.partition_path, m.file_name, m.io_type) for m in markers] if markers
               else _files_from_listing(table, instant_time))
    entries += [(part, name, mk.IO_APPEND) for part, name in appended if (part, name, mk.IO_APPEND) not in entries]
    entries += [e for e in _resize_children_files(table, instant_time) if e not in entries]
    if action in ("commit", "deltacommit", "replacecommit", "compaction", "logcompaction") and not markers:
        # completed instants (markers gone): the commit metadata names the files
        try:
            written = list(table.timeline.commit_metadata(instant_time).iter_write_stats())
        except HoodieError:  # gone or unreadable: the listing above is what there is
            written = []
        for part, st in written:
            if st.path:
                name = st.file_name
                io = mk.IO_APPEND if ".log." in name else mk.IO_CREATE
                if (part, name, io) not in entries:
                    entries.append((part, name, io))
            for cdc_path in st.cdc_stats or {}:  # a CDC table's .cdc logs of the commit
                entry = (part, cdc_path.rsplit("/", 1)[-1], mk.IO_CREATE)
                if entry not in entries:
                    entries.append(entry)
    layout = table.format.log_file_layout
    # Hudi 1.x leaves a file deletion's request without file id and base instant ("")
    blank = "" if layout.rollback_deletes_logs else None
    requests: dict[tuple[str, str], dict[str, Any]] = {}
    for part, name, io in entries:
        full = storage.join(base_path, part, name) if part else storage.join(base_path, name)
        # a .cdc log is written whole by the instant it is named after (HoodieCDCLogger): deleted
        if io == mk.IO_APPEND and (layout.is_written_by(name, instant_time) or is_cdc_log_name(name)):
            if not storage.exists(full):
                continue  # a marker for a roll-over file never created
            io = mk.IO_CREATE  # the failed instant's own log file: deleted, no command block
        if io == mk.IO_APPEND:
            st = storage.info(full)
            if st is None:
                continue
            fid = name[1:].split("_", 1)[0] if name.startswith(".") else name
            base_instant = name[1:].split("_", 1)[1].split(".log.")[0] if name.startswith(".") else None
            req = requests.setdefault((part, "log:" + fid), {
                "partitionPath": part, "fileId": fid, "latestBaseInstant": base_instant,
                "filesToBeDeleted": [], "logBlocksToBeDeleted": {}})
            req["logBlocksToBeDeleted"][full] = st.size
        else:
            req = requests.setdefault((part, "files"), {
                "partitionPath": part, "fileId": blank, "latestBaseInstant": blank,
                "filesToBeDeleted": [], "logBlocksToBeDeleted": None if blank is None else {}})
            if full not in req["filesToBeDeleted"]:
                req["filesToBeDeleted"].append(full)
    return {"instantToRollback": {"commitTime": instant_time, "action": action},
            "RollbackRequests": list(requests.values()), "version": 1}


def pending_rollbacks(tl: Any) -> list[tuple[Instant, dict[str, Any]]]:
    """Pending rollback instants with their plans, oldest first (a plan that cannot be read
    is skipped: it names no target)."""
    found = []
    for r in tl.filter(actions="rollback").pending().instants:
        try:
            found.append((r, avro_codec.deserialize(tl.read_details(r.requested()), "HoodieRollbackPlan")))
        except Exception:  # noqa: BLE001
            continue
    return found


def _encode(name: str, record: Mapping[str, Any]) -> bytes:
    return avro_codec.serialize(name, dict(record))


def rollback_instant(table: HoodieTable, target: str, rollback_time: str | None = None, pending_only: bool = False, latest_only: bool = True,
                     appended: Sequence[tuple[str, str]] = ()) -> str:
    """Roll back instant ``target`` (pending, or the latest completed write); returns the rollback instant.

    A pending rollback of the same target (killed earlier) is resumed from its plan.
    ``pending_only`` (failed writes): a target found completed is refused with
    :class:`HoodieTimelineError`, however it was judged before: its writer finished after all.
    ``latest_only=False`` (the metadata table, whose delta commits a log rollback block can
    cancel in any order): a completed target need not be the latest. ``appended``: see
    :func:`make_rollback_plan`.
    """

    tl = table.timeline.reload() if hasattr(table.timeline, "reload") else table.timeline
    inst = tl.get(target)
    writer = table.timeline_writer()
    # resume a pending rollback of this target
    plan, rb_instant = next(((p, r) for r, p in pending_rollbacks(tl)
                             if (p.get("instantToRollback") or {}).get("commitTime") == target), (None, None))
    if inst is None and plan is None:
        raise HoodieTimelineError(f"Instant {target} is not on the timeline of {table.base_uri}; nothing to roll back.")
    if inst is not None and inst.is_completed and pending_only:
        raise HoodieTimelineError(f"{inst.action} {target} completed meanwhile; a completed write is not rolled "
                                  "back as failed.")
    target_completed = inst is not None and inst.is_completed
    if target_completed and latest_only:
        later = [i for i in tl.completed_commits().instants if i.timestamp > target]
        if later:
            raise HoodieError(f"Instant {target} is not the latest completed write (later: {later[-1].timestamp}); "
                              "only the latest write can be rolled back — use restore for older ones.")
    action = inst.action if inst is not None else plan["instantToRollback"]["action"]
    if plan is None:
        plan = make_rollback_plan(table, target, action, appended)
        ts = rollback_time or table.new_instant_time()
        rb_instant = Instant(ts, "rollback", State.REQUESTED)
        writer.create_requested(rb_instant, _encode("HoodieRollbackPlan", plan))
    ts = rb_instant.timestamp
    if rb_instant.state == State.REQUESTED:
        writer.transition_to_inflight(Instant(ts, "rollback", State.REQUESTED), b"")
    if target_completed:
        # unpublished before a byte of it goes, as Hudi's revertToInflight: a rollback killed
        # half way leaves a pending write that readers skip and the next writer's
        # rollback_failed_writes finishes from this plan, not a completed commit with files missing
        writer.revert_completed_to_inflight(inst)
    if inst is not None:
        _drop_resize_rings(table, target)
    started = time.time()
    storage = table.storage
    part_meta: dict[str, dict[str, Any]] = {}
    deleted_total = 0
    # Hudi 1.x records "no log file touched" as empty maps, 0.x as null
    no_logs = (lambda: {}) if table.format.log_file_layout.rollback_deletes_logs else (lambda: None)
    for req in plan.get("RollbackRequests") or []:
        part = req["partitionPath"]
        pm = part_meta.setdefault(part, {"partitionPath": part, "successDeleteFiles": [], "failedDeleteFiles": [],
                                         "rollbackLogFiles": no_logs(), "logFilesFromFailedCommit": no_logs()})
        for f in req.get("filesToBeDeleted") or []:
            # a file already gone counts as deleted; any other storage error fails the
            # rollback, which stays pending and is resumed from its plan (Hudi's rollback
            # helper does the same): completed, it would leave the file for a later reader
            storage.delete(f)
            pm["successDeleteFiles"].append(storage.uri(f))
            deleted_total += 1
        logs = req.get("logBlocksToBeDeleted") or {}
        if logs:
            _append_rollback_block(table, req, ts, target, pm, logs)
    md = {"startRollbackTime": ts, "timeTakenInMillis": int((time.time() - started) * 1000),
          "totalFilesDeleted": deleted_total, "commitsRollback": [target], "partitionMetadata": part_meta,
          "version": 1, "instantsRollback": [{"commitTime": target, "action": action}]}
    mirrored = _mirror_in_metadata_table(table, target, ts, md)
    # the target's instant files go before the rollback completes: a crash in between re-runs this plan
    writer.delete_instant_files(target, action, completed_first=True)
    mk.delete_marker_dir(storage, table.base_path, target)
    # a write that never completed put no file in any listing
    commit.complete(table, Instant(ts, Action.ROLLBACK, State.INFLIGHT), md, ensure_locks_held,
                    changes_listing=target_completed and not mirrored)
    if hasattr(table, "reload_timeline"):
        table.reload_timeline()
    return ts


def _mirror_in_metadata_table(table: HoodieTable, target: str, ts: str, md: Mapping[str, Any]) -> bool:
    """What Hudi's metadata writer does for a data rollback ``ts``, before it completes: a
    delta commit ``ts`` listing the log files the rollback and the rolled-back write left
    (a rollback block cancels a log's records, it deletes no file), then a rollback of the
    metadata table's own delta commit of the target, completed or not, at ``ts`` + "006"
    (HoodieTableMetadataUtil's rollback suffix): its rollback block hides the target's
    records from every reader. On Hudi 1.x tables that rollback runs alone, at ``ts``. Returns
    whether the metadata table was kept in step."""
    settings = commit.metadata_settings(table)
    if settings is None or not files_partition_ready(table.reload_config()):
        return False
    mdt = table.metadata_table()
    timeline = mdt.reload_timeline()
    undoable = timeline.get(target) is not None and not merged_by_compaction(timeline, target)
    if undoable and mdt.format.rolls_back_metadata_at_rollback_time:
        # Hudi 1.x rolls the metadata table's delta commit of the target back at the data
        # rollback's own time: its log files go, and with them every record of the target
        rollback_instant(mdt, target, rollback_time=ts, latest_only=False)
        return True
    # the delta commit also tombstones the files the rollback deleted: that alone keeps the
    # listing true when the target's records were compacted into a base file, where no
    # rollback block reaches them (Hudi refuses that rollback; validateRollback)
    # the record index gets the keys' locations without the target (record_index.py), the
    # secondary indexes the entries of the rows without it (secondary_index_writer.py)
    rolling_back = Instant(ts, Action.ROLLBACK, State.INFLIGHT)
    index_change = record_index_change(table, rolling_back, md) if has_record_index(table.config) else None
    update_files_partition(table, ts, files_change(Action.ROLLBACK, md), settings, index_change,
                           secondary_index_change(table, rolling_back, md))
    if undoable:
        rollback_instant(mdt, target, rollback_time=ts + METADATA_ROLLBACK_SUFFIX, latest_only=False)
    return True


def undo_metadata_commit(table: HoodieTable, instant_time: str) -> None:
    """Roll back the metadata table's delta commit ``instant_time`` before a table service
    runs its plan again under that same instant. A dead attempt's delta commit (pending, or
    completed before the data commit was) lists files the retry deleted, and completing
    ``instant_time`` again would make its blocks count. Hudi gets there through the rollback
    of the inflight compaction or clustering, which its metadata writer mirrors."""
    if not has_metadata_table(table, reload=True):
        return
    mdt = table.metadata_table()
    timeline = mdt.reload_timeline()
    if timeline.get(instant_time) is None:
        return
    if merged_by_compaction(timeline, instant_time):
        raise HoodieError(
            f"The metadata table of {table.base_uri} compacted the delta commit {instant_time} of a table service "
            "attempt that never completed, so it cannot be undone. Rebuild the metadata table (run a write with "
            "hoodie.metadata.enable=false, then one with it true), then run the service again.")
    appended: list[tuple[str, str]] = []
    if not mdt.format.log_file_layout.names_logs_by_write_instant:
        # no markers, and log names that carry their slice, not their writer: the logs that
        # hold the attempt's blocks are found by their headers (metadata-table logs are small)
        for fs in mdt.file_system_view().latest_file_slices():
            for lf in fs.log_files:
                path = mdt.storage.join(mdt.base_path, fs.partition_path, lf.file_name)
                if any(b.instant_time == instant_time for b in read_log_blocks(mdt.storage, path)):
                    appended.append((fs.partition_path, lf.file_name))
    rollback_instant(mdt, instant_time, latest_only=False, appended=appended)


def _append_rollback_block(table: HoodieTable, req: Mapping[str, Any], ts: str, target: str,
                           pm: dict[str, Any], logs: Mapping[str, int]) -> None:
    """A rollback command block in a new log file (the next version) of each file slice the
    failed write appended to, as Hudi 0.14 does: an existing log file is never rewritten,
    since a reader may be reading it (and object stores cannot append)."""

    storage = table.storage
    pm["rollbackLogFiles"] = pm["rollbackLogFiles"] or {}
    pm["logFilesFromFailedCommit"] = pm["logFilesFromFailedCommit"] or {}
    slices: dict[tuple[str, str, str, str], None] = {}
    for path, size in logs.items():
        pm["logFilesFromFailedCommit"][storage.uri(path)] = int(size)
        parsed = parse_log_file_name(path.rsplit("/", 1)[-1])
        if parsed is None:
            raise HoodieError(f"{path} in the rollback plan of {target} is not a log file name.")
        slices[(path.rsplit("/", 1)[0], parsed.file_id, parsed.base_instant, parsed.ext)] = None
    data = serialize_block(lb.rollback_command_block(ts, target))
    for part_dir, file_id, base_instant, ext in slices:
        version, _, latest, size = latest_log_file(storage, part_dir, file_id, base_instant, ext)
        if latest is not None and size == len(data) and storage.read_bytes(latest) == data:
            # a resumed rollback: its killed attempt already wrote this block; a second copy
            # would be a log file that no listing (the metadata table's included) names
            pm["rollbackLogFiles"][storage.uri(latest)] = len(data)
            continue
        while True:
            version += 1
            new_path = storage.join(part_dir, log_file_name(file_id, base_instant, version,
                                                            make_write_token(0, 0, 0), ext))
            if storage.create_if_absent(new_path, data):
                break
        pm["rollbackLogFiles"][storage.uri(new_path)] = storage.size(new_path)


def rollback_latest_or(table: HoodieTable, instant_time: str | None, config: HoodieConfig | None = None) -> dict[str, Any]:
    """Entry for the rollback job: the given instant, or the latest write instant. Decided
    and done under the table lock; a pending write whose heartbeat is live is refused (it
    belongs to a running task).

    "The latest write" with the caller's write identity in ``config`` (the job's ``--write-id``):
    a retry whose earlier try completed its rollback returns that rollback instead of rolling
    back the write before it (:mod:`rollback_identity`)."""
    settings = ActionSettings.from_config(config)
    commit.prepare_for_change(table, settings.change)
    tm = transaction_manager_for(table, settings.lock)
    write_id = settings.write_id if instant_time is None else None
    with tm.transaction("roll back an instant"):
        tl = table.reload_timeline()
        earlier = _completed_by_earlier_try(table, tl, write_id) if write_id else None
        if earlier is not None:
            return {"instant": earlier.rollback_instant, "action": "rollback", "state": "COMPLETED",
                    "rolled_back": earlier.target, "already_rolled_back": True}
        unfinished = [p["instantToRollback"]["commitTime"] for _, p in pending_rollbacks(tl)]
        if instant_time is None and unfinished:
            # a killed rollback (this task's earlier try, under the lock as this one is) is
            # finished first: once its target left the timeline, "the latest write" is an
            # earlier one, which nobody asked to roll back
            instant_time = unfinished[-1]
        if instant_time is None:
            writes = tl.filter(actions=("commit", "deltacommit", "replacecommit")).instants
            if not writes:
                raise HoodieError(f"The table at {table.base_uri} has no write instant to roll back.")
            instant_time = writes[-1].timestamp
        target = tl.get(instant_time)
        done = rollback_that_removed(table, instant_time) if target is None and instant_time not in unfinished \
            else None
        if done is not None:  # the retry of a task whose rollback completed before it could report
            return {"instant": done, "action": "rollback", "state": "COMPLETED", "rolled_back": instant_time,
                    "already_rolled_back": True}
        if target is not None and not target.is_completed and not tm.heartbeats.is_expired(instant_time):
            raise HoodieError(
                f"{target.action} {instant_time} is pending and its writer is alive (live heartbeat); it is not "
                "rolled back. Stop that task first, or wait until its heartbeat expires.")
        if target is not None and target.is_completed:
            _refuse_savepointed(tl, instant_time)
            _refuse_beside_writers_built_on(table, tm, target)
        rollback_time = None
        if write_id:
            # recorded before the rollback instant exists: a retry trusts the record only once
            # the timeline holds that rollback, completed
            resumed = next((r.timestamp for r, p in pending_rollbacks(tl)
                            if (p.get("instantToRollback") or {}).get("commitTime") == instant_time), None)
            rollback_time = resumed or table.new_instant_time()
            record_rollback(table, RollbackRecord(write_id, rollback_time, instant_time))
        ts = rollback_instant(table, instant_time, rollback_time=rollback_time)
    tm.heartbeats.stop(instant_time)
    return {"instant": ts, "action": "rollback", "state": "COMPLETED", "rolled_back": instant_time}


def _completed_by_earlier_try(table: HoodieTable, tl: Any, write_id: str) -> RollbackRecord | None:
    """The rollback an earlier try of this task (same write identity) completed, as its record
    names it and the timeline confirms: that rollback instant is completed and rolled back the
    recorded target."""
    record = recorded_rollback(table, write_id)
    if record is None:
        return None
    done = tl.get(record.rollback_instant)
    if done is None or not done.is_completed or done.action != Action.ROLLBACK:
        return None  # that try never got as far (or its rollback is pending: resumed below)
    try:
        md = avro_codec.deserialize(tl.read_details(done), "HoodieRollbackMetadata")
    except Exception:  # noqa: BLE001 - unreadable metadata confirms nothing
        return None
    return record if record.target in (md.get("commitsRollback") or []) else None


def _refuse_savepointed(tl: Any, instant_time: str) -> None:
    """A savepoint is the user's promise that a commit's data stays restorable; rolling the
    commit back would void it silently (Hudi refuses too: validateSavepointRollbacks)."""
    if any(sp.timestamp == instant_time for sp in tl.filter(actions=Action.SAVEPOINT).completed().instants):
        raise HoodieTimelineError(
            f"Instant {instant_time} is savepointed and is not rolled back. Delete its savepoint first "
            "(HoodieSavepointOperator with delete=True), then roll it back, or restore to an earlier savepoint.")


def rollback_that_removed(table: HoodieTable, target: str) -> str | None:
    """The completed rollback instant whose metadata names ``target``."""

    tl = table.reload_timeline()
    for r in reversed(tl.filter(actions="rollback").instants):
        if not r.is_completed:
            continue
        try:
            md = avro_codec.deserialize(tl.read_details(r), "HoodieRollbackMetadata")
        except Exception:  # noqa: BLE001 - unreadable metadata: not the one we look for
            continue
        if target in (md.get("commitsRollback") or []):
            return r.timestamp
    return None


def discard_after_rollback(table: HoodieTable, target: str) -> list[str]:
    """Undo what a write's tasks wrote *after* another task rolled its instant back (its
    heartbeat looked expired while it was alive). Those files carry an instant no longer
    on the timeline: hidden now, but taken for archived, committed data once archival
    passes their time. Markers name them (each is created before its file): created
    files go, appended log files get a rollback block under that rollback's time."""
    storage, base = table.storage, table.base_path
    if not mk.list_markers(storage, base, target):
        return []
    rollback_ts = rollback_that_removed(table, target)
    plan = make_rollback_plan(table, target, "commit")
    removed: list[str] = []
    for req in plan["RollbackRequests"]:
        for path in req.get("filesToBeDeleted") or []:
            if storage.delete(path):
                removed.append(path)
        logs = req.get("logBlocksToBeDeleted") or {}
        if logs and rollback_ts is not None:
            _append_rollback_block(table, req, rollback_ts, target,
                                   {"rollbackLogFiles": None, "logFilesFromFailedCommit": None}, logs)
            removed.extend(logs)
    mk.delete_marker_dir(storage, base, target)
    return removed


def _undone(table: HoodieTable, target: str) -> bool:
    """Whether a completed rollback or restore undid ``target`` (Hudi 0.14's restore keeps its
    rollbacks only in its own metadata)."""
    if rollback_that_removed(table, target) is not None:
        return True
    tl = table.reload_timeline()
    for r in tl.filter(actions=Action.RESTORE).completed().instants:
        try:
            md = avro_codec.deserialize(tl.read_details(r), "HoodieRestoreMetadata")
        except Exception:  # noqa: BLE001 - unreadable metadata proves nothing
            continue
        if target in (md.get("instantsToRollback") or []):
            return True
    return False


def discard_dead_child_groups(table: HoodieTable, dual_writes: Mapping[tuple[str, str], str]) -> list[str]:
    """Delete every file of the child groups a failed dual write targeted
    (``dual_writes``: (partition, child file id) -> clustering instant) whose resize a rollback
    or restore undid while the write ran. That rollback deleted the files it saw there, but the
    write's tasks may have added logs after it; on table version 6 such a log carries the
    clustering's instant, so the write's own rollback only appends a rollback block and the
    file would stay, a log-only group no ring knows (the next resize refuses the table, the
    ring loader's recommit check may take the dead ring for committed). The groups are dead for
    good (their ids are fresh prefixes of that plan), so nothing of them is kept. Returns the
    deleted paths."""
    present = {i.timestamp for i in table.reload_timeline().instants}
    dead = {ts for ts in set(dual_writes.values()) if ts not in present and _undone(table, ts)}
    by_part: dict[str, set[str]] = {}
    for (part, fid), ts in dual_writes.items():
        if ts in dead:
            by_part.setdefault(part, set()).add(fid)
    removed: list[str] = []
    for part, ids in sorted(by_part.items()):
        folder = table.partition_dir(part)
        for e in table.storage.list_dir(folder) if table.storage.exists(folder) else []:
            parsed = None if e.is_dir else (parse_log_file_name(e.name) or parse_base_file_name(e.name))
            if parsed is not None and parsed.file_id in ids and table.storage.delete(e.path):
                removed.append(e.path)
    return removed


def _refuse_beside_writers_built_on(table: HoodieTable, tm: Any, target: Any) -> None:
    """A completed write is not rolled back while a later write is running: that writer
    planned on top of it and would bring its records back (or lose its own) at commit."""

    later = [i for i in live_writes(table, tm) if i.timestamp > target.timestamp]
    if later:
        raise HoodieConcurrentWriterError(
            f"Cannot roll back {target.action} {target.timestamp}: {later[0].action} {later[0].timestamp} started "
            "after it and is still running (live heartbeat), on top of its data. Nothing was changed; run the "
            "rollback when that task has finished (or roll both back, newest first).")
