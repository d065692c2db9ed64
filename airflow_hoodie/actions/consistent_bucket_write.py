"""The consistent-hashing bucket index on the write path (Hudi's HoodieSparkConsistentBucketIndex):
a record's location is the file group of the ring node its key hashes to, in its partition.

Each partition's ring is its committed ``.hashing_meta`` (:mod:`airflow_hoodie.table.
hashing_metadata_store`); a partition written for the first time gets the default ring of
``hoodie.bucket.index.num.buckets`` nodes, created before any data is written (Hudi does the
same, and a rolled back write leaves it: every writer creates the same bytes). A record's
"bucket" in the shared bucket routing is its node's position on its partition's ring, so the
simple bucket index's tagging and routing steps (:mod:`bucket_index_write`) are reused as they
are; a node whose group does not exist yet is written as a new group named ``prefix-0``.

While a resize clustering of a partition is pending, its old groups are under pending
clustering. By default a write to them is refused, as Hudi's default update strategy
(SparkRejectUpdateStrategy) does. With ``hoodie.clustering.updates.strategy`` =
SparkConsistentBucketDuplicateUpdateStrategy (:class:`DualWrite`) every record located in such a
group is written twice: to the old group (readers see it now) and to the child group the pending
plan's child nodes give its key (so it survives the clustering, which rewrites the old groups as
of the plan and never reads the new logs). A record is located by its key's node whether the
key exists or not (Hudi's ConsistentBucketIndexLocationMapper), so new keys are duplicated too,
and so are deletes. The child group has no file yet: its records go to logs of the slice based
at the clustering instant (Hudi's HoodieAppendHandle takes the record location's instant as the
base instant of a group without slice), invisible until the replacecommit completes and then
read after the clustering's base file, so the latest values win.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.bucket_index_write import BUCKET_ID_COL
from airflow_hoodie.actions.index import LOC_FILE, LOC_PART
from airflow_hoodie.config_keys.clustering import DUPLICATE_UPDATE_STRATEGY, REJECT_UPDATE_STRATEGY, UPDATES_STRATEGY
from airflow_hoodie.errors import HoodieError, HoodieNotSupportedError
from airflow_hoodie.settings.bucket_index import BucketIndexSettings
from airflow_hoodie.table.consistent_hashing import (
    NORMAL,
    HashingMetadata,
    HashingNode,
    Ring,
    key_hashes,
    plan_child_nodes,
)
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.hashing_metadata_store import load_metadata, save_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from airflow_hoodie.table.timeline.instant import Action, State



def ring_loader(table: HoodieTable) -> Callable[[str], HashingMetadata | None]:
    """Loads a partition's committed ring against ``table``'s timeline (the marker fix-up needs
    completed and pending commits / replacecommits, and the partition's latest groups)."""
    tl = table.reload_timeline()
    done = {i.timestamp for i in tl.instants if i.state == State.COMPLETED
            and i.action in (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)}
    pending = {i.timestamp for i in tl.instants if i.state != State.COMPLETED}

    def load(partition: str) -> HashingMetadata | None:
        def latest() -> list[str]:
            return [f.file_id for f in table.planning_view().existing_files([partition])]
        return load_metadata(table.storage, table.base_path, partition, done.__contains__, pending.__contains__,
                             latest)
    return load


def load_or_create_rings(table: HoodieTable, partitions: Iterable[str], num_buckets: int) -> dict[str, Ring]:
    """Hudi's loadOrCreateMetadata for each partition of a write."""
    load = ring_loader(table)
    rings = {}
    for p in sorted(set(partitions)):
        meta = load(p)
        if meta is None:
            meta = HashingMetadata.default(p, num_buckets)
            save_metadata(table.storage, table.base_path, meta)
        rings[p] = Ring(meta)
    return rings


def ring_positions(keys: pa.Array | pa.ChunkedArray, partitions: pa.Array | pa.ChunkedArray,
                   rings: Mapping[str, Ring], fields: Sequence[str], parser: str) -> np.ndarray:
    """Each record's node position (int32) on its partition's ring: the keys hashed in one numpy
    pass (:func:`key_hashes`), then one ``searchsorted`` per partition."""
    hashes = key_hashes(keys, fields, parser)
    codes = pc.dictionary_encode(partitions.combine_chunks() if isinstance(partitions, pa.ChunkedArray)
                                 else partitions)
    code = codes.indices.to_numpy(zero_copy_only=False)
    ids = np.empty(len(hashes), np.int32)
    for i, part in enumerate(codes.dictionary.to_pylist()):
        rows = np.flatnonzero(code == i)
        ids[rows] = rings[part].positions(hashes[rows])
    return ids


def with_ring_ids(batch: pa.Table, rings: Mapping[str, Ring], fields: Sequence[str], parser: str) -> pa.Table:
    """``batch`` with :data:`BUCKET_ID_COL`: each record's node position on its partition's ring."""
    ids = ring_positions(batch.column(RECORD_KEY), batch.column(PARTITION_PATH), rings, fields, parser)
    return batch.append_column(BUCKET_ID_COL, pa.array(ids, pa.int32()))


@dataclass(frozen=True)
class DualWrite:
    """The duplicate update strategy of one write: for each partition under a pending resize,
    its clustering instant and the ring its committed nodes make with the plan's child nodes
    (Hudi builds the same ConsistentBucketIdentifier), and the old groups that plan rewrites."""

    fields: tuple[str, ...]
    parser: str
    #: partition -> (clustering instant, committed ring with the plan's children applied)
    resizes: dict[str, tuple[str, Ring]]
    #: (partition, file id) of every group under a pending resize
    old_groups: frozenset[tuple[str, str]]

    def child_groups(self) -> dict[tuple[str, str], str]:
        """(partition, child file id) -> the clustering instant its slice is based at."""
        return {(p, n.file_id): ts for p, (ts, ring) in self.resizes.items() for n in ring.nodes
                if n.tag != NORMAL}

    def duplicate(self, located: pa.Table) -> pa.Table:
        """``located`` plus, for each record located in a group under a pending resize, a copy
        located in the child group its key hashes to on the pending ring."""
        if not self.old_groups or not located.num_rows:
            return located
        olds = sorted(self.old_groups)
        at = pc.index_in(located.column(LOC_FILE), value_set=pa.array([f for _p, f in olds], pa.string()))
        part_of_old = pa.array([p for p, _f in olds], pa.string()).take(at)
        hit = pc.fill_null(pc.equal(part_of_old, located.column(LOC_PART)), False)
        rows = located.filter(hit)
        if not rows.num_rows:
            return located
        parts = rows.column(LOC_PART)
        hashes = key_hashes(rows.column(RECORD_KEY), self.fields, self.parser)
        codes = pc.dictionary_encode(parts.combine_chunks())
        code = codes.indices.to_numpy(zero_copy_only=False)
        child = np.empty(rows.num_rows, object)
        for i, part in enumerate(codes.dictionary.to_pylist()):
            where = np.flatnonzero(code == i)
            _ts, ring = self.resizes[part]
            child[where] = np.array([n.file_id for n in ring.nodes], object)[ring.positions(hashes[where])]
        dup = rows.set_column(rows.schema.get_field_index(LOC_FILE), LOC_FILE, pa.array(child, pa.string()))
        return pa.concat_tables([located, dup])


def pending_resizes(table: HoodieTable, rings: Mapping[str, Ring]) -> dict[str, tuple[str, Ring]]:
    """Each partition of ``rings`` under a pending resize: (its clustering instant, its committed
    ring with the plan's child nodes). As Hudi's strategy checks: one pending resize per
    partition, planned on the committed ring (same seqNo)."""
    view = table.file_system_view(table.reload_timeline())
    children: dict[str, tuple[str, list[HashingNode]]] = {}
    for inst in view.timeline.pending_replace():
        for part, (seq, nodes) in plan_child_nodes(view.clustering_plan(inst.timestamp)).items():
            if part not in rings:
                continue
            if part in children:
                raise HoodieError(f"Partition {part or '<root>'!r} is under two pending resizes ({children[part][0]}, "
                                  f"{inst.timestamp}). Nothing was written. Roll back one of them.")
            if seq != rings[part].metadata.seq_no:
                raise HoodieError(
                    f"Resize {inst.timestamp} of partition {part or '<root>'!r} was planned on ring seqNo {seq}, but "
                    f"the committed ring is seqNo {rings[part].metadata.seq_no}. Nothing was written. Roll back that "
                    "clustering.")
            children[part] = (inst.timestamp, nodes)
    return {p: (ts, Ring(rings[p].metadata, nodes)) for p, (ts, nodes) in children.items()}


@dataclass
class ConsistentRouting:
    """Where each (partition, node position) of one write goes; the interface of
    :class:`~airflow_hoodie.actions.bucket_index_write.BucketRouting`."""

    settings: BucketIndexSettings
    parser: str
    rings: dict[str, Ring]
    existing: dict[tuple[str, int], ExistingFile]
    created: dict[tuple[str, int], str] = field(default_factory=dict)
    #: the duplicate update strategy's work, None when no record can hit a pending resize
    dual: DualWrite | None = None

    def duplicates(self) -> Callable[[pa.Table], pa.Table] | None:
        """The (picklable) function adding a located batch's dual writes, None when there are none."""
        return self.dual.duplicate if self.dual is not None else None

    def child_groups(self) -> dict[tuple[str, str], str]:
        """(partition, child file id) -> clustering instant: the groups dual writes may create."""
        return self.dual.child_groups() if self.dual is not None else {}

    @property
    def width(self) -> int:
        """An upper bound of the node positions (locating multiplies partitions by it)."""
        return max([len(r.nodes) for r in self.rings.values()] + [1])

    def id_function(self) -> Callable[[pa.Table], pa.Table]:
        return partial(with_ring_ids, rings=self.rings, fields=self.settings.hash_fields, parser=self.parser)

    def file_id(self, partition: str, bucket: int) -> str | None:
        f = self.existing.get((partition, bucket))
        return f.file_id if f is not None else self.created.get((partition, bucket))

    def create(self, pairs: Iterable[tuple[str, int]]) -> None:
        """A node without a group gets its group, named after the node (``prefix-0``)."""
        for part, bucket in sorted(set(pairs)):
            if self.file_id(part, bucket) is None:
                self.created[(part, bucket)] = self.rings[part].nodes[bucket].file_id

    def locations(self) -> dict[tuple[str, int], str]:
        out = {k: f.file_id for k, f in self.existing.items()}
        out.update(self.created)
        return out


def consistent_routing(table: HoodieTable, files: Sequence[ExistingFile], partitions: Sequence[str],
                       settings: BucketIndexSettings, parser: str, config_get: Callable[[str], str | None]
                       ) -> ConsistentRouting:
    """The routing of a consistent-hashing write: every latest group of the batch's
    partitions must be a node of its partition's ring, else the table was written otherwise
    and the write stops before any change."""
    strategy = (config_get(UPDATES_STRATEGY) or REJECT_UPDATE_STRATEGY).strip()
    if strategy not in (REJECT_UPDATE_STRATEGY, DUPLICATE_UPDATE_STRATEGY):
        raise HoodieNotSupportedError(
            f"{UPDATES_STRATEGY}={strategy} is not supported on a consistent-hashing table. Nothing was written. Use "
            f"{REJECT_UPDATE_STRATEGY} (the default: writes to buckets under a pending resize are refused) or "
            f"{DUPLICATE_UPDATE_STRATEGY} (they are written to the old and the new bucket).")
    rings = load_or_create_rings(table, partitions, settings.num_buckets)
    existing: dict[tuple[str, int], ExistingFile] = {}
    for f in files:
        ring = rings.get(f.partition_path)
        if ring is None:
            continue
        pos = {n.file_id: i for i, n in enumerate(ring.nodes)}
        if f.file_id not in pos:
            raise HoodieError(
                f"File group {f.file_id} of partition {f.partition_path or '<root>'!r} is not a bucket of the "
                f"partition's consistent-hashing ring ({ring.metadata.file_name}, {len(ring.nodes)} buckets). Nothing "
                "was written. The table holds groups another index wrote, or a resize left its ring behind; restore "
                "the table to before that write, or rewrite it into a new table.")
        existing[(f.partition_path, pos[f.file_id])] = f
    old = frozenset((f.partition_path, f.file_id) for f in files if f.in_clustering and f.partition_path in rings)
    dual = None
    if strategy == DUPLICATE_UPDATE_STRATEGY and old:
        dual = DualWrite(tuple(settings.hash_fields), parser, pending_resizes(table, rings), old)
        stray = sorted(g for g in old if g[0] not in dual.resizes)
        if stray:
            raise HoodieError(
                f"File group {stray[0][1]} of partition {stray[0][0] or '<root>'!r} is under a pending clustering that "
                "is not a consistent-hashing resize (its plan names no child nodes), so its records have no new bucket. "
                "Nothing was written. Run or roll back that clustering first.")
    return ConsistentRouting(settings, parser, rings, existing, dual=dual)


__all__ = ["ConsistentRouting", "DualWrite", "consistent_routing", "load_or_create_rings", "pending_resizes",
           "ring_loader", "ring_positions", "with_ring_ids"]


PARTITION_BUCKET_META = ".hoodie/.bucket_index/partition_bucket_index_meta"


def refuse_unsupported_bucket_layout(table: HoodieTable | None, settings: BucketIndexSettings | None,
                                     table_type: str) -> None:
    """Before any change: the consistent-hashing engine only on MERGE_ON_READ (Hudi's only
    table type for it); a table with consistent-hashing metadata only by that engine (another
    index would write groups the ring does not know); Hudi 1.1's partition-level bucket index
    not at all."""
    if settings is not None and settings.consistent and table_type != "MERGE_ON_READ":
        raise HoodieNotSupportedError(
            "hoodie.index.bucket.engine=CONSISTENT_HASHING works on MERGE_ON_READ tables only (as in Hudi); this "
            f"table is {table_type}. Nothing was written. Use hoodie.table.type=MERGE_ON_READ for a new table, or the "
            "SIMPLE bucket engine.")
    if table is None:
        return
    from airflow_hoodie.table.consistent_hashing import HASHING_META_FOLDER
    if table.storage.exists(table.storage.join(table.base_path, PARTITION_BUCKET_META)):
        raise HoodieNotSupportedError(
            f"{table.base_uri} uses Hudi 1.1's partition-level bucket index ({PARTITION_BUCKET_META}: a bucket "
            "count per partition), which is not supported here. Nothing was written. Write this table with Hudi's "
            "own writers.")
    ring_table = table.storage.exists(table.storage.join(table.base_path, HASHING_META_FOLDER))
    if ring_table and (settings is None or not settings.consistent):
        raise HoodieNotSupportedError(
            f"{table.base_uri} is laid out by Hudi's consistent-hashing bucket index ({HASHING_META_FOLDER}), but "
            "this write does not use it: its file groups would be unknown to the table's hash rings. Nothing was "
            "written. Write with hoodie.index.type=BUCKET and hoodie.index.bucket.engine=CONSISTENT_HASHING.")
