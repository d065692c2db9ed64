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
clustering, and a write to them is refused, as Hudi's default update strategy
(SparkRejectUpdateStrategy) does; Hudi's dual-writing strategy
(SparkConsistentBucketDuplicateUpdateStrategy) is not built here and is refused by name.
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
from airflow_hoodie.errors import HoodieError, HoodieNotSupportedError
from airflow_hoodie.settings.bucket_index import BucketIndexSettings
from airflow_hoodie.table.consistent_hashing import HashingMetadata, Ring, key_hashes
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.hashing_metadata_store import load_metadata, save_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from airflow_hoodie.table.timeline.instant import Action, State

UPDATES_STRATEGY = "hoodie.clustering.updates.strategy"
DUPLICATE_UPDATE_STRATEGY = "org.apache.hudi.client.clustering.update.strategy.SparkConsistentBucketDuplicateUpdateStrategy"


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


@dataclass
class ConsistentRouting:
    """Where each (partition, node position) of one write goes; the interface of
    :class:`~airflow_hoodie.actions.bucket_index_write.BucketRouting`."""

    settings: BucketIndexSettings
    parser: str
    rings: dict[str, Ring]
    existing: dict[tuple[str, int], ExistingFile]
    created: dict[tuple[str, int], str] = field(default_factory=dict)

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
    if (config_get(UPDATES_STRATEGY) or "").strip() == DUPLICATE_UPDATE_STRATEGY:
        raise HoodieNotSupportedError(
            f"{UPDATES_STRATEGY}={DUPLICATE_UPDATE_STRATEGY} (writing to both the old and the new buckets of a "
            "pending resize) is not supported here. Nothing was written. Leave the updates strategy at its default "
            "(writes to buckets under a pending resize are refused) and run the resize clustering to completion.")
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
    return ConsistentRouting(settings, parser, rings, existing)


__all__ = ["ConsistentRouting", "DUPLICATE_UPDATE_STRATEGY", "UPDATES_STRATEGY", "consistent_routing",
           "load_or_create_rings", "ring_loader", "with_ring_ids"]


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
