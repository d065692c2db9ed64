"""Hudi's SimpleConcurrentFileWritesConflictResolutionStrategy: an instant may commit
only if nothing that completed since it started wrote or replaced one of its file
groups, and no compaction or clustering planned since took one of them. Checked under the
table lock against a freshly loaded timeline.

The other side of that rule keeps writers live beside services (:func:`groups_held_by_live_writes`):
a plan made under the lock leaves out the file groups that live writers declared in their
inflight workload profiles, so a writer's conflict check never finds a plan over its groups
and a retried writer wins instead of losing to every plan scheduled while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from airflow_hoodie.actions.transaction.failed_writes import live_writes
from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieError, HoodieWriteConflictError
from airflow_hoodie.table.bucket_index import is_bucket_file_id
from airflow_hoodie.table.file_group.file_system_view import FileSystemView
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
)
from airflow_hoodie.table.timeline.instant import Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

FileGroupId = tuple[str, str]  # (partition path, file id)
ARCHIVED: FileGroupId = ("", "<archived: its file groups are no longer on the active timeline>")


@dataclass(frozen=True)
class TimelineSnapshot:
    """What a writer knew when it started: the instants completed and pending then."""

    completed: frozenset[tuple[str, str]]
    pending: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, timeline: Timeline) -> "TimelineSnapshot":
        done = frozenset((i.timestamp, i.action) for i in timeline.instants if i.is_completed)
        todo = frozenset((i.timestamp, i.action) for i in timeline.instants if not i.is_completed)
        return cls(done, todo)


def file_groups_of(timeline: Timeline, instant: Instant) -> set[FileGroupId]:
    """File groups a completed instant wrote to or replaced."""
    data = timeline.read_details(instant)
    if not data:
        return set()
    try:
        if instant.action == "replacecommit":
            meta: CommitMetadata = ReplaceCommitMetadata.from_json(data)
            groups = {(p or "", f) for p, f in meta.replaced_file_ids()}  # type: ignore[attr-defined]
        else:
            meta = CommitMetadata.from_json(data)
            groups = set()
    except HoodieCorruptedDataError:
        raise
    except ValueError as exc:
        raise HoodieCorruptedDataError(f"commit metadata of {instant} is unreadable: {exc}") from exc
    return groups | {(p or "", f) for p, f in meta.file_ids()}


WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit", "compaction")


def by_bucket(groups: Iterable[FileGroupId]) -> set[FileGroupId]:
    """File groups as a bucket-index writer sees them: a bucket-named group as its
    (partition, bucket), so two writers that each created a new group for one bucket (their
    file ids differ past the bucket number) conflict, as Hudi's
    BucketIndexConcurrentFileWritesConflictResolutionStrategy has it."""
    return {(p, f"bucket {f[:8]}" if is_bucket_file_id(f) else f) for p, f in groups}


def conflicting_instants(timeline: Timeline, own: Instant, own_groups: Iterable[FileGroupId],
                         started: TimelineSnapshot, bucket_scope: bool = False
                         ) -> list[tuple[Instant, set[FileGroupId]]]:
    """Instants completed after ``started`` that touched ``own_groups`` (with
    ``bucket_scope``, the same buckets: :func:`by_bucket`). A compaction
    already planned when we started is not one: the writer saw its plan and wrote into
    the slice after it (Hudi's resolveConflict lets a compaction older than the writer
    pass). Completed, it shows as a ``commit`` at the plan's time."""
    scope = by_bucket if bucket_scope else set
    mine = scope(own_groups)
    out = []
    for inst in timeline.instants:
        key = (inst.timestamp, inst.action)
        if not inst.is_completed or key in started.completed or inst.timestamp == own.timestamp:
            continue
        if inst.action not in WRITE_ACTIONS:
            continue
        if inst.action in ("compaction", "commit") and (inst.timestamp, "compaction") in started.pending:
            continue
        overlap = scope(file_groups_of(timeline, inst)) & mine
        if overlap:
            out.append((inst, overlap))
    out.extend(_services_planned_since(timeline, mine, started, scope))
    out.extend(_archived_since(timeline, started))
    return out


def _rolled_back(timeline: Timeline) -> set[str]:
    """Instant times the rollbacks on the active timeline undid."""

    out: set[str] = set()
    for inst in timeline.instants:
        if inst.action == "rollback" and inst.is_completed:
            try:
                out.update(avro_codec.deserialize(timeline.read_details(inst), "HoodieRollbackMetadata")
                           .get("commitsRollback") or [])
            except Exception:  # noqa: BLE001 - unreadable: it proves nothing, the instant stays suspect
                continue
    return out


def _archived_since(timeline: Timeline, started: TimelineSnapshot) -> list[tuple[Instant, set[FileGroupId]]]:
    """Writes pending when we started that are gone from the active timeline, not by a
    rollback: they completed and archival moved them out before our commit (it may, as
    their time is before ours). Their file groups cannot be compared any more, so they
    count as conflicts: aborting is safe, committing could hide their records."""
    present = {i.timestamp for i in timeline.instants}
    gone = sorted(ts for ts, action in started.pending
                  if action in ("commit", "deltacommit", "replacecommit") and ts not in present)
    if not gone:
        return []
    undone = _rolled_back(timeline)
    return [(Instant(ts, action, State.COMPLETED), {ARCHIVED})
            for ts, action in sorted(started.pending) if ts in gone and ts not in undone]


def _services_planned_since(timeline: Timeline, mine: set[FileGroupId], started: TimelineSnapshot,
                            scope: Callable[[Iterable[FileGroupId]], set[FileGroupId]] = set
                            ) -> list[tuple[Instant, set[FileGroupId]]]:
    """Compaction or clustering plans scheduled after we started that take one of our
    file groups: their plan was made without our files, so committing would lose them."""
    assert timeline.storage is not None and timeline.base_path is not None
    plans = FileSystemView(timeline.storage, timeline.base_path, timeline, None)
    planned: dict[tuple[str, str], set[FileGroupId]] = {}
    for group, (ts, _op) in plans.pending_compaction_operations().items():
        planned.setdefault((ts, "compaction"), set()).add(group)
    for group, ts in plans.pending_clustering_file_groups().items():
        planned.setdefault((ts, "replacecommit"), set()).add(group)
    out = []
    for (ts, action), groups in sorted(planned.items()):
        # table version 8+ names a pending clustering "clustering" (a replacecommit once done)
        seen = {(ts, action)} | ({(ts, "clustering")} if action == "replacecommit" else set())
        if seen & (started.pending | started.completed):
            continue
        overlap = scope(groups) & mine
        if overlap:
            inst = timeline.get(ts, action)
            if inst is not None:
                out.append((inst, overlap))
    return out


def check_no_conflict(timeline: Timeline, own: Instant, own_groups: Iterable[FileGroupId],
                      started: TimelineSnapshot, bucket_scope: bool = False) -> None:
    conflicts = conflicting_instants(timeline, own, own_groups, started, bucket_scope)
    if conflicts:
        inst, groups = conflicts[0]
        if groups == {ARCHIVED}:
            raise HoodieWriteConflictError(
                f"Write conflict: {inst.action} {inst.timestamp} was pending when {own.action} {own.timestamp} "
                "started, completed meanwhile and was archived before this commit, so its file groups cannot be "
                f"checked against ours. {own.timestamp} was rolled back and wrote nothing; a retry of this task "
                "redoes it cleanly on top of the new data.")
        sample = ", ".join(f"{p or '<root>'}/{f}" for p, f in sorted(groups)[:3])
        raise HoodieWriteConflictError(
            f"Write conflict: {inst.action} {inst.timestamp} completed or was planned while {own.action} "
            f"{own.timestamp} was running, over the same file groups ({sample}{' ...' if len(groups) > 3 else ''}). "
            f"{own.timestamp} was rolled back and wrote nothing; a retry of this task redoes it cleanly on top "
            "of the new data.")


def check_dual_write_targets(timeline: Timeline, own: Instant, dual_writes: Mapping[FileGroupId, str]) -> None:
    """A consistent-hashing write that dual-wrote into the child groups of pending resizes
    (``dual_writes``: (partition, child file id) -> clustering instant) commits only while each
    of those clusterings is still pending, or completed (then :func:`conflicting_instants`
    finds the replacecommit over our old groups). A clustering gone from the timeline was rolled
    back: its rollback deleted the child groups' files it saw, so the logs this write put there
    are missing or stray; committing would name them, and table version 8+ would read a stray
    child log as a visible log-only group (rows twice) while the ring loader's recommit check
    could take the dead ring for committed. Hudi's duplicate update strategy has no such check:
    this write aborts instead, and its retry writes on the ring as it is now."""
    present = {i.timestamp for i in timeline.instants}
    gone = sorted({ts for ts in dual_writes.values() if ts not in present})
    if gone:
        groups = sorted(g for g, ts in dual_writes.items() if ts == gone[0])
        sample = ", ".join(f"{p or '<root>'}/{f}" for p, f in groups[:3])
        raise HoodieWriteConflictError(
            f"Write conflict: {own.action} {own.timestamp} wrote duplicates of its records into the child groups "
            f"({sample}{' ...' if len(groups) > 3 else ''}) of the consistent-hashing resize {gone[0]}, which was "
            f"rolled back while it ran. {own.timestamp} was rolled back and wrote nothing; a retry of this task "
            "redoes it cleanly on the partition's current ring.")


@dataclass(frozen=True)
class HeldGroups:
    """What live writers hold: the file groups they declared, or the first live writer that
    has not declared them yet (its instant is requested, its profile not written)."""

    groups: frozenset[FileGroupId]
    undeclared: Instant | None = None


def groups_held_by_live_writes(table: HoodieTable, tm: TransactionManager) -> HeldGroups:
    """File groups that live writers (pending, heartbeat live) are writing, from the
    workload profile each wrote into its ``.inflight`` file before touching any file (Hudi's
    writers do the same, so Java writers' groups are held too).

    A plan that took one of them would make that writer's commit fail its conflict check
    (Hudi's getCandidateInstants counts plans scheduled after the writer), and a writer
    retried beside services planned back to back would lose every time. Hudi 1.x avoids it by
    slicing files by completion time; table version 6 slices by instant time, so the plan
    leaves the groups to the writer, and a later plan takes them. An insert_overwrite
    replaces groups its profile does not list: it holds everything until it is done, like a
    write that has not declared its groups yet."""
    held: set[FileGroupId] = set()
    for inst in live_writes(table, tm):
        if inst.state != State.INFLIGHT or inst.action == "replacecommit":
            return HeldGroups(frozenset(held), inst)
        try:
            data = table.timeline.read_details(inst)
            meta = CommitMetadata.from_json(data) if data else None
        except (HoodieError, ValueError):
            meta = None  # being written: not declared yet
        if meta is None:
            return HeldGroups(frozenset(held), inst)
        held.update((p or "", f) for p, f in meta.file_ids())
    return HeldGroups(frozenset(held))
