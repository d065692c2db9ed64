"""Which files of a table are visible, grouped into file groups and slices.

Mirrors Hudi's ``AbstractTableFileSystemView`` (0.14's on table version 6, 1.x's on 8 and 9):

* a file slice exists when its base instant is a completed write, a compaction
  instant (pending ones open the new slice), or older than the active timeline
  (archived); files of failed or in-flight writes stay invisible;
* the base file a pending compaction is producing is never visible;
* log files are visible with their slice and the log reader filters blocks by instant; on
  8 and 9 a log names the delta commit that wrote it, not its slice, and joins the slice its
  completion time falls in (:func:`file_group.build_file_groups_by_completion_time`);
* file groups replaced by a completed replacecommit (insert overwrite, clustering)
  are hidden; pending clustering and compaction plans are exposed for writers.

One listing of the base path (:meth:`FileSystemView._list`, the single
point where the storage -- or the metadata table -- is asked for files) feeds the whole
view: readers, writers (:meth:`FileSystemView.existing_files`), the table services
(:meth:`FileSystemView.service_file_groups`), savepoint and rollback all see the same
files. The view is built from ``(storage, base_path, timeline, config)`` and knows
nothing of :class:`HoodieTable`, so the table can build it without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.consistent_hashing import plan_child_nodes
from airflow_hoodie.table.file_group.file_group import (
    BaseFile,
    FileGroup,
    FileSlice,
    LogFile,
    build_file_groups,
    build_file_groups_by_completion_time,
    carry_logs_of_visible_writes,
)
from airflow_hoodie.table.file_group.written_files import commit_files, deleted_by_rollbacks, latest_files_per_timeline
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata_table.files_listing import (
    files_partition_ready,
    load_files_listing,
    storage_listing,
)
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.table_format import TableFormat
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    normalize_instant_time,
)
from airflow_hoodie.table.timeline.replace_kind import is_clustering_metadata
from airflow_hoodie.table.timeline.timeline import Timeline


@dataclass
class ExistingFile:
    """The latest file slice of one file group, as the index and bucketing see it."""

    partition_path: str
    file_id: str
    base_file: str | None          # relative path
    base_instant: str
    base_size: int
    log_files: list[str]           # relative paths
    log_size: int = 0
    in_clustering: bool = False    # under a pending clustering plan: no updates, no small-file inserts
    # where the group's live keys are: with a pending compaction the latest slice is empty and
    # the keys live in the previous slice (+ logs), i.e. the merged slice
    lookup_base_file: str | None = None
    lookup_log_files: list[str] | None = None


def _rel(partition_path: str, name: str) -> str:
    return f"{partition_path}/{name}" if partition_path else name


class FileSystemView:
    """File groups of the table at ``base_path`` as seen through ``timeline``."""

    def __init__(self, storage: Storage, base_path: str, timeline: Timeline, config: TableConfig | None,
                 use_metadata_table: bool = False) -> None:
        """``config`` (the base file format) is needed only to list files: a view asked only
        for the pending plans or replacements of a timeline may pass None.
        ``use_metadata_table``: list through the metadata table's ``files`` partition when
        the table has one (Hudi's ``hoodie.metadata.enable``)."""
        self.storage = storage
        self.base_path = base_path.rstrip("/")
        self.timeline = timeline
        self.config = config
        self.use_metadata_table = use_metadata_table
        self._partitions: list[str] | None = None
        self._groups: dict[tuple[str, str], FileGroup] | None = None
        self._replace_cache: dict[str, dict[str, list[str]]] = {}
        self._compaction_ops: dict[tuple[str, str], tuple[str, dict]] | None = None
        self._clustering: dict[tuple[str, str], str] | None = None
        #: what was listed (partition, path, size of every data file; the partitions),
        #: before the timeline groups it: a view of another timeline may share it
        self._listed: tuple[list[tuple[str, str, int]], set[str]] | None = None
        #: the completed instants :meth:`check_latest_files_present` passed on with this listing
        self._present_for: tuple[tuple[str, str, str | None], ...] | None = None

    # ------------------------------------------------------------------ listing
    def _load(self) -> None:
        if self._groups is not None:
            return
        if self.config is None:
            raise ValueError("FileSystemView built without the table config cannot list files")
        if self._listed is None:
            self._listed = self._list()
        files, listed_partitions = self._listed
        partitions = set(listed_partitions)
        ext = self.config.base_file_extension
        bases: list[BaseFile] = []
        logs: list[LogFile] = []
        for part, path, size in files:
            name = path.rsplit("/", 1)[-1]
            if name.startswith("."):
                lf = LogFile.from_path(path, size, part)
                if lf is not None:
                    logs.append(lf)
            else:
                bf = BaseFile.from_path(path, size, part)
                if bf is not None and bf.file_name.endswith(ext):
                    bases.append(bf)
        # a directory holding Hudi's data files is a partition even if its marker was lost:
        # hiding it would drop its rows from reads and let an upsert insert its keys again
        # (Hudi's index lists a batch's partitions directly; the next commit into the
        # partition writes the marker again)
        partitions.update(f.partition_path for f in bases)
        partitions.update(f.partition_path for f in logs)
        self._partitions = sorted(partitions)
        if TableFormat.of(self.config).log_file_layout.slices_by_completion_time:
            self._groups = self._slice_by_completion_time(bases, logs)
        else:
            self._groups = build_file_groups(bases, logs)

    def _list(self) -> tuple[list[tuple[str, str, int]], set[str]]:
        """(partition, path, size) of every data file and the partitions holding a partition
        metafile: from the metadata table's ``files`` partition or from storage (one storage
        listing, :func:`storage_listing`, serves this and a damaged files partition's fallback)."""
        if self.lists_through_metadata_table:
            listing = load_files_listing(self.storage, self.base_path, self.timeline)
        else:
            listing = storage_listing(self.storage, self.base_path)
        files: list[tuple[str, str, int]] = []
        for part, names in listing.files.items():
            folder = Storage.join(self.base_path, part) if part else self.base_path
            files.extend((part, Storage.join(folder, name), size) for name, size in names.items())
        return files, set(listing.partitions)

    def _slice_by_completion_time(self, bases: list[BaseFile], logs: list[LogFile]) -> dict[tuple[str, str], FileGroup]:
        """Table version 8+: :func:`build_file_groups_by_completion_time`."""
        compactions = [(part, fid, ts) for (part, fid), (ts, _op) in self.pending_compaction_operations().items()]
        # groups pending resizes create: a dual write's log joins the (hidden) slice at the clustering instant
        children = [(p, n.file_id, i.timestamp) for i in self.timeline.pending_replace() for p, (_s, nodes) in
                    plan_child_nodes(self.clustering_plan(i.timestamp)).items() for n in nodes if n.file_id_prefix]
        return build_file_groups_by_completion_time(bases, logs, self.timeline.completion_times(),
                                                    self.timeline.first_non_savepoint_commit(), compactions, children)

    @property
    def lists_through_metadata_table(self) -> bool:
        """Whether files come from the metadata table's ``files`` partition instead of storage."""
        return bool(self.use_metadata_table and self.config is not None and files_partition_ready(self.config))

    def seen_through(self, timeline: Timeline, config: TableConfig | None) -> "FileSystemView":
        """A view of ``timeline`` that shares this view's metadata-table listing when it
        would list the same.

        A write checks the table when it loads it and plans once its instant exists. When no
        instant completed in between, the metadata table lists the same files (its listing
        changes only with a completed instant), so the second read of the files partition --
        its HFiles and logs read and merged again -- is left out, and so is the check of the
        latest files, which that listing already passed; the files the write plans on are
        still asked of storage (:meth:`check_on_storage`). A storage listing is not shared:
        listing storage again is what finds a file deleted behind the table in between."""
        view = FileSystemView(self.storage, self.base_path, timeline, config, self.use_metadata_table)
        if (self._listed is not None and self.lists_through_metadata_table and view.lists_through_metadata_table
                and timeline.completed_fingerprint() == self.timeline.completed_fingerprint()):
            view._listed = self._listed
            view._present_for = self._present_for
        return view

    def refresh(self, timeline: Timeline | None = None) -> None:
        """Forget the listing (and optionally switch timeline) after the table changed."""
        self._groups = None
        self._partitions = None
        self._compaction_ops = None
        self._clustering = None
        self._listed = None
        self._present_for = None
        if timeline is not None:
            self.timeline = timeline

    def partitions(self) -> list[str]:
        """Relative partition paths (``""`` for the non-partitioned table), sorted."""
        self._load()
        return list(self._partitions or [])

    def all_file_groups(self, partition: str | None = None) -> list[FileGroup]:
        """Every file group of every partition with every file, committed or not."""
        self._load()
        assert self._groups is not None
        parts = set(self._partitions or [])
        return [g for k, g in sorted(self._groups.items())
                if k[0] in parts and (partition is None or k[0] == partition)]

    # --------------------------------------------------------------- visibility
    def _timeline_as_of(self, as_of: str | None) -> Timeline:
        return self.timeline.as_of(as_of) if as_of else self.timeline

    def _visible_instants(self, as_of: str | None) -> tuple[set[str], set[str], str | None, str | None]:
        """(visible base instants, pending compactions, last visible, start of timeline)."""
        tl = self._timeline_as_of(as_of)
        visible_tl = tl.completed_and_compaction()
        visible = set(visible_tl.timestamps)
        pending_compaction = set(tl.pending_compactions().timestamps)
        last = max(visible, key=normalize_instant_time) if visible else None
        return visible, pending_compaction, last, self.timeline.first_non_savepoint_commit()

    def _slice_committed(
        self, base_instant: str, visible: set[str], last: str | None, start: str | None, as_of: str | None
    ) -> bool:
        bi = normalize_instant_time(base_instant)
        if last is None:
            # time travel to before the active timeline: the files of archived (hence
            # completed) commits up to ``as_of``, as Hudi's view and hudi-rs take them
            return (as_of is not None and start is not None and bi <= normalize_instant_time(as_of)
                    and bi < normalize_instant_time(start))
        if bi > normalize_instant_time(last):
            return False
        if as_of and bi > normalize_instant_time(as_of):
            return False
        if base_instant in visible:
            return True
        # Files older than the active timeline belong to archived (completed) instants.
        return start is not None and bi < normalize_instant_time(start)

    def _visible_group(self, group: FileGroup, visible: set[str], pending: set[str], last: str | None,
                       start: str | None, as_of: str | None, clusterings: frozenset[str]) -> FileGroup:
        out, dropped = FileGroup(group.partition_path, group.file_id), []
        for s in group.slices:
            if not self._slice_committed(s.base_instant, visible, last, start, as_of):
                if s.base_instant not in clusterings:  # a resize child's dual-written logs stay hidden with it
                    dropped.append(s)
                continue
            base = s.base_file if s.base_instant not in pending else None
            out.slices.append(FileSlice(s.partition_path, s.file_id, s.base_instant, base, list(s.log_files)))
        return carry_logs_of_visible_writes(out, dropped, as_of or last, TableFormat.of(self.config).log_file_layout)

    def file_groups(
        self, partition: str | None = None, as_of: str | None = None, include_replaced: bool = False
    ) -> list[FileGroup]:
        """File groups with only their visible slices (groups with none are dropped)."""
        self._load()
        assert self._groups is not None
        visible, pending, last, start = self._visible_instants(as_of)
        replaced = set() if include_replaced else self.replaced_file_groups(as_of)
        ops = self.pending_compaction_operations() if pending else {}
        clusterings = frozenset(i.timestamp for i in self.timeline.filter(actions=(Action.REPLACE_COMMIT,
                                                                                    Action.CLUSTERING)).instants)
        out = []
        partitions = set(self._partitions or [])
        for key, group in sorted(self._groups.items()):
            if key[0] not in partitions or (partition is not None and key[0] != partition):
                continue
            if key in replaced:
                continue
            vg = self._visible_group(group, visible, pending, last, start, as_of, clusterings)
            op = ops.get(key)
            if op is not None and op[0] in pending and vg.slices:
                vg.add_empty_slice(op[0])
            if vg.slices:
                out.append(vg)
        return out

    def latest_file_slices(self, partition: str | None = None, as_of: str | None = None) -> list[FileSlice]:
        """The latest visible slice of every live file group (Hudi ``getLatestFileSlices``).

        With a pending compaction, the latest slice of an affected group is the new one
        at the compaction instant: only the log files written after the plan, no base
        file. Snapshot readers want :meth:`latest_merged_file_slices` instead.
        """
        out = []
        for g in self.file_groups(partition, as_of):
            s = g.latest_slice()
            if s is not None:
                out.append(s)
        return out

    def latest_merged_file_slices(
        self, partition: str | None = None, as_of: str | None = None
    ) -> list[FileSlice]:
        """Latest slices, a pending compaction's new slice merged into the previous one.

        Hudi's ``getLatestMergedFileSlicesBeforeOrOn``: the merged slice keeps the
        previous base file and base instant and carries the log files of both slices
        in order, which is what a snapshot read of a MOR table must merge.
        """
        _, pending, _, _ = self._visible_instants(as_of)
        out = []
        for g in self.file_groups(partition, as_of):
            s = g.latest_slice()
            if s is None:
                continue
            if s.base_instant in pending and len(g.slices) >= 2:
                prev = g.slices[-2]
                merged = FileSlice(
                    s.partition_path, s.file_id, prev.base_instant, prev.base_file,
                    sorted(prev.log_files + s.log_files, key=lambda lf: lf.sort_key),
                )
                s = merged
            if not s.is_empty:
                out.append(s)
        return out

    def latest_base_files(self, partition: str | None = None, as_of: str | None = None) -> list[BaseFile]:
        """Latest visible base file per live file group (read-optimized queries)."""
        out = []
        for g in self.file_groups(partition, as_of):
            bf = g.latest_base_file()
            if bf is not None:
                out.append(bf)
        return out

    def latest_file_slice(self, partition: str, file_id: str, as_of: str | None = None) -> FileSlice | None:
        for s in self.latest_file_slices(partition, as_of):
            if s.file_id == file_id:
                return s
        return None

    # ------------------------------------------------------------- replacements
    def _replace_file_ids(self, ts: str) -> dict[str, list[str]]:
        if ts not in self._replace_cache:
            files = commit_files(self.timeline, Instant(ts, Action.REPLACE_COMMIT, State.COMPLETED))
            self._replace_cache[ts] = {part: list(ids) for part, ids in files.replaced}
        return self._replace_cache[ts]

    def replaced_file_groups(self, as_of: str | None = None) -> set[tuple[str, str]]:
        """``(partition, fileId)`` replaced by completed replacecommits (at or before ``as_of``)."""
        tl = self._timeline_as_of(as_of).filter(actions=Action.REPLACE_COMMIT, states=State.COMPLETED)
        out: set[tuple[str, str]] = set()
        for inst in tl:
            for part, fids in self._replace_file_ids(inst.timestamp).items():
                out.update((part, fid) for fid in fids or [])
        return out

    def replace_instants_by_group(self, as_of: str | None = None) -> dict[tuple[str, str], str]:
        """Which replacecommit replaced each replaced file group (cleaner needs the time)."""
        tl = self._timeline_as_of(as_of).filter(actions=Action.REPLACE_COMMIT, states=State.COMPLETED)
        out: dict[tuple[str, str], str] = {}
        for inst in tl:
            for part, fids in self._replace_file_ids(inst.timestamp).items():
                for fid in fids or []:
                    out[(part, fid)] = inst.timestamp
        return out

    # ----------------------------------------------------------- pending plans
    def pending_compaction_operations(self) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
        """``{(partition, fileId): (compaction instant, HoodieCompactionOperation dict)}``."""
        if self._compaction_ops is None:
            ops: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
            for inst in self.timeline.pending_compactions():
                plan = self._read_plan(inst.timestamp, "compaction", "HoodieCompactionPlan")
                for op in (plan or {}).get("operations") or []:
                    ops[(op.get("partitionPath") or "", op["fileId"])] = (inst.timestamp, op)
            self._compaction_ops = ops
        return dict(self._compaction_ops)

    def clustering_plan(self, ts: str) -> dict[str, Any] | None:
        """The clustering plan of replacecommit ``ts``, or None (insert_overwrite has none).

        Hudi's ``ClusteringUtils.getClusteringPlan``: the requested replace metadata must be a
        clustering (:func:`replace_kind.is_clustering_metadata`, the one rule) and carry a plan.
        """
        meta = self._read_plan(ts, "replacecommit", "HoodieRequestedReplaceMetadata")
        plan = (meta or {}).get("clusteringPlan")
        if not meta or not is_clustering_metadata(meta) or not plan:
            return None
        return plan

    def pending_clustering_file_groups(self) -> dict[tuple[str, str], str]:
        """``{(partition, fileId): replacecommit instant}`` for groups in pending clustering plans."""
        if self._clustering is None:
            out: dict[tuple[str, str], str] = {}
            for inst in self.timeline.pending_replace():
                for group in (self.clustering_plan(inst.timestamp) or {}).get("inputGroups") or []:
                    for sl in group.get("slices") or []:
                        out[(sl.get("partitionPath") or "", sl["fileId"])] = inst.timestamp
            self._clustering = out
        return dict(self._clustering)

    def _read_plan(self, ts: str, what: str, schema: str) -> dict | None:
        data = self.timeline.read_plan(ts)
        if not data:
            return None
        try:
            return avro_codec.deserialize(data, schema)
        except Exception as exc:  # fastavro raises many types on bad input
            raise HoodieCorruptedDataError(
                f"The {what} plan {ts}.{what}.requested cannot be decoded ({exc}); "
                "the file is corrupt or not an Avro plan."
            ) from exc

    def file_groups_in_pending_services(self) -> set[tuple[str, str]]:
        """Groups a writer must not touch: in pending compaction or clustering."""
        return set(self.pending_compaction_operations()) | set(self.pending_clustering_file_groups())

    def savepointed_files(self) -> set[str]:
        """Base file names pinned by completed savepoints (the cleaner keeps them)."""
        files: set[str] = set()
        for inst in self.timeline.savepoints().filter(states=State.COMPLETED):
            try:
                meta = avro_codec.deserialize(self.timeline.read_details(inst), "HoodieSavepointMetadata")
            except Exception as exc:  # fastavro raises many types on bad input
                raise HoodieCorruptedDataError(
                    f"Savepoint {inst.timestamp} metadata cannot be decoded ({exc}); the instant file is corrupt."
                ) from exc
            for pm in (meta.get("partitionMetadata") or {}).values():
                files.update(pm.get("savepointDataFile") or [])
        return files

    # ------------------------------------------------------------ services view
    def service_file_groups(self) -> dict[tuple[str, str], FileGroup]:
        """File groups as the table services plan on them, replaced groups included.

        A base file counts once its instant completed (or is older than the start of the
        active timeline's writes, :meth:`Timeline.first_non_savepoint_commit`: archived,
        hence completed; a clean or rollback left older than an archived commit does not
        move that start, or the archived commit's base files would vanish from the plans
        and a compaction would rewrite the slice from its logs alone, issue 35 F1); log
        files count whatever their blocks (the log scanner skips uncommitted blocks); a
        pending compaction adds its (still empty) new slice. The cleaner must see replaced
        groups to delete them, so they are not hidden here.
        """
        self._load()
        assert self._groups is not None
        completed = {i.timestamp for i in self.timeline.instants if i.state == State.COMPLETED}
        start = self.timeline.first_non_savepoint_commit()
        out: dict[tuple[str, str], FileGroup] = {}
        for group in self.all_file_groups():
            key = group.file_group_id
            fg = FileGroup(*key)
            for s in group.slices:
                base = s.base_file
                if base is not None and not (
                        base.commit_time in completed
                        or (start is not None
                            and normalize_instant_time(base.commit_time) < normalize_instant_time(start))):
                    base = None
                if base is not None or s.log_files:
                    fg.slices.append(FileSlice(s.partition_path, s.file_id, s.base_instant, base, list(s.log_files)))
            if fg.slices:
                out[key] = fg
        for (part, fid), (ts, _op) in self.pending_compaction_operations().items():
            fg = out.get((part, fid))
            if fg is not None and fg.slice_at(ts) is None:
                fg.add_empty_slice(ts)
        return out

    def service_latest_slices(self) -> list[FileSlice]:
        """Latest slice of each live (not replaced) group of :meth:`service_file_groups`."""
        self.check_latest_files_present()
        replaced = self.replace_instants_by_group()
        return [fg.slices[-1] for key, fg in sorted(self.service_file_groups().items())
                if key not in replaced and fg.slices]

    def savepoint_files(self, instant_time: str) -> dict[str, list[str]]:
        """partition -> base file names a reader as of ``instant_time`` uses (what a savepoint pins)."""
        replaced = {k for k, ts in self.replace_instants_by_group().items() if ts <= instant_time}
        out: dict[str, list[str]] = {}
        for key, fg in sorted(self.service_file_groups().items()):
            if key in replaced:
                continue
            base = next((s.base_file for s in reversed(fg.slices)
                         if s.base_instant <= instant_time and s.base_file is not None), None)
            if base is not None:
                out.setdefault(fg.partition_path, []).append(base.file_name)
        return out

    def base_files_written_at(self, instant_time: str) -> list[BaseFile]:
        """Base files carrying ``instant_time``, committed or not, in any folder (rollback
        without markers: a failed write may have died before its partition metafile)."""
        self._load()
        assert self._groups is not None
        return [bf for _, g in sorted(self._groups.items()) for bf in g.all_base_files()
                if bf.commit_time == instant_time]

    # -------------------------------------------------------- missing files
    def latest_files_per_timeline(self) -> dict[tuple[str, str], tuple[str, set[str]]]:
        """:func:`written_files.latest_files_per_timeline` of this view's timeline, replaced groups left out."""
        ext = self.config.base_file_extension if self.config is not None else ".parquet"
        return latest_files_per_timeline(self.storage, self.timeline, ext, self.replaced_file_groups())

    def check_latest_files_present(self) -> None:
        """Refuse to read or write over a table whose timeline names a file that is gone.

        Without this a deleted base or log file silently drops its slice back to older data
        (or no data), and the next write bases itself on that view, making it permanent. A
        file that a replacecommit and clean completed since this view's timeline removed is
        no loss: the check is repeated on a fresh timeline before it fails. Passed once for a
        listing, it is not repeated while the completed instants stay the same (its answer
        depends on nothing else).
        """
        completed = self.timeline.completed_fingerprint()
        if self._listed is not None and self._present_for == completed:
            return
        missing = self._first_missing_latest_file()
        if missing is not None and self.timeline.storage is not None:
            fresh = FileSystemView(self.storage, self.base_path, self.timeline.reload(), self.config,
                                   self.use_metadata_table)
            missing = fresh._first_missing_latest_file()
        if missing is not None:
            raise self._missing_file_error(*missing)
        self._present_for = completed

    def _missing_file_error(self, path: str, ts: str, part: str, fid: str) -> HoodieCorruptedDataError:
        return HoodieCorruptedDataError(
            f"{self.storage.uri(self.storage.join(self.base_path, path))} is missing: commit {ts} "
            f"wrote it as the latest version of file group {part or '<non-partitioned>'}/{fid}, and reading "
            "without it would silently return older data. Nothing was read or written. Put the file back "
            "(object-store versioning, a backup), or restore the table to a savepoint before "
            f"{ts} (`airflow-hoodie`/RestoreOperator), then retry.")

    def check_on_storage(self, files: Sequence[ExistingFile]) -> None:
        """Each listed file of ``files`` must be on storage: one HEAD per file, in parallel.

        A view listed through the metadata table names files without asking storage, so a
        file deleted behind the table's back would only show when a task opens it,
        after part of the write ran. The write asks only for the slices it plans on (the
        batch's partitions), so the requests follow the write, not the table."""
        wanted: dict[str, tuple[str, str, str, str]] = {}
        for f in files:
            for path in [f.base_file, *f.log_files, f.lookup_base_file, *(f.lookup_log_files or [])]:
                if path:
                    wanted.setdefault(path, (path, f.base_instant, f.partition_path, f.file_id))
        if not wanted:
            return
        paths = sorted(wanted)
        present = self.storage.side_by_side(lambda p: self.storage.file_exists(self.storage.join(self.base_path, p)),
                                            paths)
        missing = [wanted[path] for path, ok in zip(paths, present) if not ok]
        if missing and self.timeline.storage is not None:
            # a clustering and clean that completed since this view's timeline may have removed
            # files of groups they replaced: no loss (the write's conflict check settles it)
            timeline = self.timeline.reload()
            seen = {i.timestamp for i in self.timeline.instants if i.is_completed}
            if any(i.is_completed and i.timestamp not in seen for i in timeline.instants):
                fresh = FileSystemView(self.storage, self.base_path, timeline, self.config,
                                       self.use_metadata_table).latest_files_per_timeline()
                missing = [m for m in missing if m[0] in fresh.get((m[2], m[3]), ("", set()))[1]]
        if missing:
            raise self._missing_file_error(*missing[0])

    def _first_missing_latest_file(self) -> tuple[str, str, str, str] | None:
        """(path, instant, partition, fileId) of the first latest-slice file not on storage."""
        self._load()
        assert self._groups is not None
        present = {_rel(bf.partition_path, bf.file_name) for g in self._groups.values() for bf in g.all_base_files()}
        present |= {_rel(lf.partition_path, lf.file_name) for g in self._groups.values() for lf in g.all_log_files()}
        missing = [(path, ts, part, fid) for (part, fid), (ts, paths) in sorted(self.latest_files_per_timeline().items())
                   for path in sorted(paths) if path not in present]
        gone = deleted_by_rollbacks(self.storage, self.base_path, self.timeline) if missing else set()
        return next((m for m in missing if m[0] not in gone), None)

    # -------------------------------------------------------------- writer view
    def existing_files(self, partitions: Iterable[str] | None = None) -> list[ExistingFile]:
        """Latest committed file slices as the index and bucketing see them.

        Groups under pending clustering are flagged (the index must still see their
        keys, or their records would be inserted a second time); with a pending
        compaction the keys are looked up in the merged slice.
        """
        self.check_latest_files_present()
        clustering = set(self.pending_clustering_file_groups())
        parts: list[str | None] = list(partitions) if partitions is not None else [None]
        slices = [s for p in parts for s in self.latest_file_slices(p)]
        merged = {(ms.partition_path, ms.file_id): ms for p in parts for ms in self.latest_merged_file_slices(p)}
        out: list[ExistingFile] = []
        for s in slices:
            ms = merged.get((s.partition_path, s.file_id))
            bf = s.base_file
            out.append(ExistingFile(
                s.partition_path, s.file_id,
                _rel(s.partition_path, bf.file_name) if bf else None,
                s.base_instant, bf.size if bf else 0,
                [_rel(s.partition_path, lf.file_name) for lf in s.log_files], sum(lf.size for lf in s.log_files),
                (s.partition_path, s.file_id) in clustering,
                _rel(ms.partition_path, ms.base_file.file_name) if ms is not None and ms.base_file else None,
                [_rel(ms.partition_path, lf.file_name) for lf in ms.log_files] if ms is not None else None,
            ))
        if self.lists_through_metadata_table:
            self.check_on_storage(out)
        return out
