"""The resize clustering of a consistent-hashing bucket table (Hudi's
SparkConsistentBucketClusteringPlanStrategy and SparkConsistentBucketClusteringExecutionStrategy).

Planning, per partition not already under clustering (Hudi's
BaseConsistentHashingBucketClusteringPlanStrategy): a bucket whose file slice (base and logs) is
larger than ``hoodie.parquet.max.file.size`` x ``hoodie.bucket.index.split.threshold`` is split
at the middle of its hash range into two new buckets, while the partition stays at most
``hoodie.bucket.index.max.num.buckets``; then runs of ring-adjacent buckets each smaller than
``max file size`` x ``hoodie.bucket.index.merge.threshold`` (together too) are merged into one,
while it stays at least ``hoodie.bucket.index.min.num.buckets``; every other bucket is rewritten
(sorted) into a new group of the same range. Each group's ``extraMetadata`` carries the
partition, its child nodes (JSON) and the ring's ``seqNo``. Nothing is planned while a
deltacommit is pending (Hudi's checkPrecondition): its records would follow the old ring.

Execution routes every row of a group by the group's child nodes (the ring they cut out of the
partition's ring) into the child's group ``prefix-0``. Before the replacecommit completes, each
partition's new ring is written as ``<instant>.hashing_meta`` (``seqNo + 1``, the children
applied, every node NORMAL), and once it completed, its ``<instant>.commit`` marker; a writer
that died in between leaves a ring the loader commits from the completed replacecommit.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.planned_service import ServiceTaskContext
from airflow_hoodie.settings.bucket_resize import BucketResizeSettings
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.consistent_hashing import (
    DELETE,
    HASHING_META_FOLDER,
    META_CHILD_NODE_KEY,
    META_PARTITION_KEY,
    META_SEQUENCE_NUMBER_KEY,
    HashingMetadata,
    HashingNode,
    Ring,
    key_hashes,
    nodes_from_json,
    nodes_json,
    plan_child_nodes,
)
from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
from airflow_hoodie.table.hashing_metadata_store import create_commit_marker, save_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.plans import ClusteringGroup, ClusteringPlan
from airflow_hoodie.table.file_group.base_file_writer import with_meta_fields
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema
from airflow_hoodie.table.schema.meta_fields import RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, State

PLAN_STRATEGY = "org.apache.hudi.client.clustering.plan.strategy.SparkConsistentBucketClusteringPlanStrategy"
EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkConsistentBucketClusteringExecutionStrategy"


def is_consistent_hashing_table(table: HoodieTable) -> bool:
    """Whether the table keeps consistent-hashing rings (the folder is the table's own record of it)."""
    return table.storage.exists(table.storage.join(table.base_path, HASHING_META_FOLDER))


def is_resize_plan(plan: ClusteringPlan) -> bool:
    return bool(plan.strategy and plan.strategy.strategy_class_name == EXECUTION_STRATEGY)


def _slice_size(s: Any) -> int:
    return int(s.base_file.size if s.base_file is not None else 0) + sum(int(lf.size or 0) for lf in s.log_files)


def _new_prefix() -> str:
    """``FSUtils.createNewFileIdPfx``: a random UUID."""
    return str(uuid.uuid4())


def plan_partition(ring: Ring, slices: Sequence[Any], config: BucketResizeSettings,
                   slice_info: Callable[[Any], dict[str, Any]], metrics: Callable[[Sequence[Any]], dict[str, float]]
                   ) -> list[dict[str, Any]]:
    """The clustering groups of one partition: splits, then merges, then a rewrite of the rest."""
    max_b, min_b, split_size, merge_size = config.max_buckets, config.min_buckets, config.split_size, config.merge_size
    by_file = {n.file_id: n for n in ring.nodes}
    part = ring.metadata.partition_path
    seq = str(ring.metadata.seq_no)
    stray = [s.file_id for s in slices if s.file_id not in by_file]
    if stray:
        raise HoodieError(f"Partition {part or '<root>'!r} has file groups that are not buckets of its ring "
                          f"({', '.join(stray[:3])}). Nothing was scheduled. Restore the table to before the write "
                          "that made them.")

    def group(fs: Sequence[Any], children: list[HashingNode], outputs: int) -> dict[str, Any]:
        return {"slices": [slice_info(s) for s in fs], "metrics": metrics(fs), "numOutputFileGroups": outputs,
                "extraMetadata": {META_PARTITION_KEY: part, META_CHILD_NODE_KEY: nodes_json(children),
                                  META_SEQUENCE_NUMBER_KEY: seq}, "version": 1}

    groups, rest = [], []
    split_slots = max_b - len(ring.nodes)
    for s in slices:
        children = ring.split(by_file[s.file_id], _new_prefix(), _new_prefix()) \
            if _slice_size(s) > split_size and split_slots > 0 else None
        if children is None:
            rest.append(s)
            continue
        split_slots -= 1
        groups.append(group([s], children, 2))
    merge_slots = len(ring.nodes) - min_b + (max_b - len(ring.nodes) - split_slots)
    rest.sort(key=lambda s: by_file[s.file_id].value)
    added = [False] * len(rest)
    n = len(rest)
    for i in range(n if n > 1 else 0):
        if added[i] or _slice_size(rest[i]) > merge_size:
            continue
        lo = hi = i
        total = _slice_size(rest[i])
        for forward in (False, True):
            while True:
                at = hi if forward else lo
                nxt = (at + 1) % n if forward else (at - 1) % n
                node = by_file[rest[at].file_id]
                neighbour = ring.latter(node) if forward else ring.former(node)
                if (merge_slots == 0 or added[nxt] or by_file[rest[nxt].file_id] != neighbour or total > merge_size
                        or _slice_size(rest[nxt]) > merge_size or nxt == (lo if forward else hi)):
                    break
                total += _slice_size(rest[nxt])
                merge_slots -= 1
                if forward:
                    hi = nxt
                else:
                    lo = nxt
                if (hi if forward else lo) == i:
                    break
        if lo == hi == i:
            continue
        members, k = [], lo
        while True:
            added[k] = True
            members.append(rest[k])
            if k == hi:
                break
            k = (k + 1) % n
        groups.append(group(members, ring.merge([by_file[m.file_id] for m in members], _new_prefix()), 1))
    for s, taken in zip(rest, added):
        if not taken:
            node = by_file[s.file_id]
            groups.append(group([s], [HashingNode(node.value, _new_prefix(), "REPLACE")], 1))
    return groups


def pending_write_reason(table: HoodieTable) -> str | None:
    """Hudi schedules no resize while a deltacommit is pending: it would write by the old ring."""
    tl = table.reload_timeline()
    pending = [i for i in tl.instants if i.action == Action.DELTA_COMMIT and i.state != State.COMPLETED]
    if pending:
        return (f"deltacommit {pending[0].timestamp} is pending; a consistent-hashing resize is planned only when no "
                "write is running (as in Hudi). Schedule again once it completed or was rolled back.")
    return None


def build_resize_plan(rings: Mapping[str, Ring], slices_by_partition: Mapping[str, Sequence[Any]], config: BucketResizeSettings,
                      slice_info: Callable[[Any], dict[str, Any]], metrics: Callable[[Sequence[Any]], dict[str, float]],
                      sort_columns: str | None) -> dict[str, Any] | None:
    """Hudi's ``HoodieClusteringPlan`` of a resize, None when no partition has slices."""
    groups = [g for p in sorted(slices_by_partition) if p in rings
              for g in plan_partition(rings[p], slices_by_partition[p], config, slice_info, metrics)]
    if not groups:
        return None
    params = {"hoodie.clustering.plan.strategy.sort.columns": sort_columns} if sort_columns else {}
    return {"inputGroups": groups, "strategy": {"strategyClassName": EXECUTION_STRATEGY, "strategyParams": params,
                                                "version": 1},
            "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True}


def hash_settings(table: HoodieTable, config: BucketResizeSettings) -> tuple[tuple[str, ...], str]:
    """(hash fields, hash-key parser) of the table: the job's hash fields, else the table's record key fields."""
    fields = config.hash_fields or tuple(table.config.record_key_fields or [])
    return tuple(fields), table.format.release.bucket_hash_key_parser


def route_group(data: pa.Table, group: ClusteringGroup, fields: Sequence[str], parser: str
                ) -> list[tuple[HashingNode, pa.Table]]:
    """Each child node of ``group`` with its rows (the rows whose hash falls in its range)."""
    children = [c for c in nodes_from_json((group.extra_metadata or {}).get(META_CHILD_NODE_KEY)) if c.tag != DELETE]
    ring = Ring(HashingMetadata("", "", len(children), 0, tuple(children)))
    where = pa.array(ring.positions(key_hashes(data.column(RECORD_KEY), fields, parser)), pa.int32())
    return [(node, data.filter(pc.equal(where, i))) for i, node in enumerate(ring.nodes)]


def new_rings(table: HoodieTable, plan: ClusteringPlan, instant: str, load: Callable[[str], HashingMetadata | None]
              ) -> list[HashingMetadata]:
    """Each planned partition's ring after the resize (Hudi's updateLocation): its committed
    ring (whose seqNo must be the plan's: no other resize came between) with the children applied."""
    children: dict[str, list[HashingNode]] = {}
    seqs: dict[str, int] = {}
    for g in plan.input_groups or []:
        meta = g.extra_metadata or {}
        p = meta[META_PARTITION_KEY]
        children.setdefault(p, []).extend(nodes_from_json(meta.get(META_CHILD_NODE_KEY)))
        seqs[p] = int(meta[META_SEQUENCE_NUMBER_KEY])
    out = []
    for p in sorted(children):
        current = load(p)
        if current is None or current.seq_no != seqs[p]:
            raise HoodieError(
                f"Resize {instant} of partition {p or '<root>'!r} was planned on ring seqNo {seqs[p]}, but the "
                f"committed ring is {'missing' if current is None else current.seq_no}: another resize came between. "
                "Roll back this clustering instant and schedule a new one.")
        out.append(current.resized(children[p], instant))
    return out


def save_rings(table: HoodieTable, rings: Sequence[HashingMetadata]) -> None:
    for meta in rings:
        save_metadata(table.storage, table.base_path, meta, overwrite=True)


def commit_rings(table: HoodieTable, rings: Sequence[HashingMetadata]) -> None:
    for meta in rings:
        create_commit_marker(table.storage, table.base_path, meta.partition_path, meta.instant)


def resize_task(ctx: ServiceTaskContext, fields: Sequence[str], parser: str,
                read_group: Callable[[ServiceTaskContext, ClusteringGroup], pa.Table],
                write_child: Callable[[ServiceTaskContext, int, str, str, pa.Table], dict[str, Any]],
                indexed: tuple[int, ClusteringGroup]) -> list[dict[str, Any]]:
    """One executor task: a group's rows, routed to its child buckets, one base file each. A
    child that gets no rows gets no file here (see :func:`empty_children_with_logs`)."""
    index, group = indexed
    data = read_group(ctx, group)
    part = sorted({s.partition_path or "" for s in group.slices or []})[0]
    return [write_child(ctx, index, part, node.file_id, rows)
            for node, rows in route_group(data, group, fields, parser) if rows.num_rows]


def empty_children_with_logs(ctx: ServiceTaskContext, plan: ClusteringPlan, stats: Sequence[Mapping[str, Any]],
                             write_child: Callable[[ServiceTaskContext, int, str, str, pa.Table], dict[str, Any]]
                             ) -> list[dict[str, Any]]:
    """Run under the table lock as the replacecommit completes: an empty base file at the
    clustering instant for each child that got no rows but holds logs that writes during the
    pending resize put there (the duplicate update strategy), so its slice has a base file and
    its logs follow it (readers such as hudi-rs drop a group made of logs only).

    Decided here, not in the tasks: a dual write may add a child's first log after its task
    ran. None can add one after this listing: a write that commits after the replacecommit
    fails its conflict check (the resize completed over its groups) and its logs are rolled
    back, and one that committed before wrote its logs before this listing."""
    have = {(s["partitionPath"], s["fileId"]) for s in stats}
    out: list[dict[str, Any]] = []
    empty = avro_to_arrow_schema(with_meta_fields(ctx.avro_schema)).empty_table()
    for part, (_seq, nodes) in sorted(plan_child_nodes(plan.to_avro()).items()):
        wanted = {n.file_id for n in nodes if n.tag != DELETE} - {f for p, f in have if p == part}
        logged = _groups_with_logs(ctx, part) & wanted if wanted else set()
        out.extend(write_child(ctx, len(plan.input_groups or []) + k, part, fid, empty)
                   for k, fid in enumerate(sorted(logged)))
    return out


def _groups_with_logs(ctx: ServiceTaskContext, partition: str) -> set[str]:
    """The file ids of ``partition``'s log files (one listing of the partition folder)."""
    storage, _ = Storage.for_uri(ctx.base_uri, ctx.storage_options or None)
    folder = storage.join(ctx.base_path, partition) if partition else ctx.base_path
    out = set()
    for e in storage.list_dir(folder):
        parsed = None if e.is_dir else parse_log_file_name(e.name)
        if parsed is not None:
            out.add(parsed.file_id)
    return out


__all__ = ["EXECUTION_STRATEGY", "PLAN_STRATEGY", "build_resize_plan", "commit_rings", "empty_children_with_logs", "hash_settings",
           "is_consistent_hashing_table", "is_resize_plan", "new_rings", "pending_write_reason", "plan_partition",
           "resize_task", "route_group", "save_rings"]
