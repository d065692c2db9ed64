"""The simple bucket index on the write path: a record's location is its bucket's file group
in its partition (Hudi's HoodieSimpleBucketIndex), and the refusals that keep a bucket
table's layout intact.

Tagging reads no file: a key's bucket comes from hashing it (:mod:`airflow_hoodie.table.
bucket_index`), and the bucket's group from the file ids of the partition's latest slices.
Every record whose bucket has a group goes to that group (an update, or an insert the merge
adds); a record whose bucket has none goes to a new group named after the bucket, one per
(partition, bucket) and write.

Why a write that does not name the bucket index into a bucket-named table is *refused*, not
written by bucket: the layout tells us a table is bucketed, but not how. The number of
buckets and the hash fields are recorded nowhere in the table (Hudi keeps them in each
writer's config; Flink's catalog at most in ``.hoodie/.aux``), and the highest bucket seen is
only a lower bound. Guessing them would put keys in other buckets than the table's own
writers put them, i.e. duplicate keys; writing random-UUID groups beside them would break
every later bucket-index write (``Integer.parseInt`` of a hex prefix) or, when the prefix
happens to be all digits, silently claim a bucket. So the write stops before any change and
says which settings to pass. A table counts as bucketed when every latest file group's id
starts with 8 digits whose number is below 100,000: a random UUID prefix is all digits for
about 2.3% of groups, so the digits alone would take one small default-index table in 43
for a bucket table; with the bound it is about one single-group table in 43,000 (and such a
writer can name the bucket index or add a hex-named group first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.index import LOC_FILE, LOC_PART
from airflow_hoodie.actions.write_records import DELETE_OPS, OP_COL
from airflow_hoodie.errors import HoodieError, HoodieNotSupportedError
from airflow_hoodie.settings.bucket_index import BucketIndexSettings
from airflow_hoodie.table.bucket_index import (
    bucket_ids,
    bucket_of_file_id,
    is_bucket_file_id,
    is_bucket_layout_file_id,
    nbcc_bucket_file_id,
    new_bucket_file_id,
)
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY

#: the bucket number of each record, while a write routes by bucket
BUCKET_ID_COL = "_hoodie_bucket_id"


def is_bucket_layout(files: Iterable[ExistingFile]) -> bool:
    """Whether there are file groups and every one of them is named by a plausible bucket
    (:func:`~airflow_hoodie.table.bucket_index.is_bucket_layout_file_id`)."""
    seen = False
    for f in files:
        if not is_bucket_layout_file_id(f.file_id):
            return False
        seen = True
    return seen


def refuse_unbucketed_write(files: Sequence[ExistingFile], index_type: str) -> None:
    """A write whose index is not BUCKET into a table laid out by bucket stops here, before
    any change (the module docstring says why it is not written by bucket instead)."""
    if index_type == "BUCKET" or not is_bucket_layout(files):
        return
    top = max(bucket_of_file_id(f.file_id) for f in files)
    raise HoodieNotSupportedError(
        f"This table is laid out by Hudi's bucket index (every file group id starts with a bucket number, up to "
        f"{top:08d}), but this write uses hoodie.index.type={index_type}: its new file groups would break the "
        "table's bucket-index writers. Nothing was written. Write with hoodie.index.type=BUCKET and the table's own "
        "hoodie.bucket.index.num.buckets (at least "
        f"{top + 1}) and hoodie.bucket.index.hash.field, as its other writers (e.g. the Flink job) use them.")


def bucket_groups(files: Iterable[ExistingFile]) -> dict[tuple[str, int], ExistingFile]:
    """(partition, bucket) -> its file group: Hudi's loadBucketIdToFileIdMappingForPartition.
    A non-bucket group, or two groups of one bucket, is refused: a bucket-index write there
    would not know where a key lives."""
    out: dict[tuple[str, int], ExistingFile] = {}
    for f in files:
        if not is_bucket_file_id(f.file_id):
            raise HoodieNotSupportedError(
                f"hoodie.index.type=BUCKET, but file group {f.file_id} of partition {f.partition_path or '<root>'!r} "
                "is not named by a bucket (it was written with another index). Nothing was written. Write this "
                "table with the index it was written with, or rewrite it into a new bucket-index table.")
        key = (f.partition_path, bucket_of_file_id(f.file_id))
        if key in out:
            raise HoodieError(
                f"Partition {f.partition_path or '<root>'!r} has two file groups for bucket {key[1]:08d} "
                f"({out[key].file_id}, {f.file_id}); Hudi's bucket index refuses such a table too. Nothing was "
                "written. Remove the group that should not be there (restore to before the write that made it).")
        out[key] = f
    return out


@dataclass
class BucketRouting:
    """Where each (partition, bucket) of one write goes: existing groups, and the new groups
    this write creates (named once, on the driver, so every task agrees)."""

    settings: BucketIndexSettings
    #: the hash-key parser of the table's release line (``split`` or ``scan``)
    parser: str
    existing: dict[tuple[str, int], ExistingFile]
    created: dict[tuple[str, int], str] = field(default_factory=dict)
    #: NBCC: a new group takes the bucket's fixed id (:func:`nbcc_bucket_file_id`), so writers
    #: that create one bucket's group at the same time write one group
    fixed_file_ids: bool = False

    @property
    def width(self) -> int:
        """An upper bound of the bucket numbers (locating multiplies partitions by it)."""
        return self.settings.num_buckets

    def id_function(self) -> Callable[[pa.Table], pa.Table]:
        """The (picklable) function adding each record's bucket to a batch."""
        return partial(with_bucket_ids, routing_settings=self.settings, parser=self.parser)

    def duplicates(self) -> Callable[[pa.Table], pa.Table] | None:
        """A simple bucket never writes a record twice (the consistent-hashing routing may)."""
        return None

    def child_groups(self) -> dict[tuple[str, str], str]:
        """No group of a simple bucket write is a pending clustering's child."""
        return {}

    def file_id(self, partition: str, bucket: int) -> str | None:
        f = self.existing.get((partition, bucket))
        return f.file_id if f is not None else self.created.get((partition, bucket))

    def create(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Name a new group for each (partition, bucket) that has none yet."""
        for part, bucket in sorted(set(pairs)):
            if self.file_id(part, bucket) is None:
                self.created[(part, bucket)] = (nbcc_bucket_file_id(bucket) if self.fixed_file_ids
                                                else new_bucket_file_id(bucket))

    def locations(self) -> dict[tuple[str, int], str]:
        """(partition, bucket) -> file id, for every group this write may write."""
        out = {k: f.file_id for k, f in self.existing.items()}
        out.update(self.created)
        return out


def routing_for(files: Iterable[ExistingFile], settings: BucketIndexSettings, parser: str,
                fixed_file_ids: bool = False) -> BucketRouting:
    """The routing of a bucket-index write over ``files`` (its partitions' latest groups),
    refused when the table holds buckets this write's bucket count cannot reach: their keys
    would be looked for elsewhere and written twice. ``fixed_file_ids``: NBCC naming of new groups."""
    existing = bucket_groups(files)
    top = max((b for _p, b in existing), default=-1)
    if top >= settings.num_buckets:
        raise HoodieNotSupportedError(
            f"The table has a file group for bucket {top:08d}, but hoodie.bucket.index.num.buckets="
            f"{settings.num_buckets}: keys would hash to other buckets than the table's writers put them in. Nothing "
            "was written. Set hoodie.bucket.index.num.buckets to the table's bucket count (changing it needs a "
            "rewrite of the table).")
    return BucketRouting(settings, parser, existing, fixed_file_ids=fixed_file_ids)


def with_bucket_ids(batch: pa.Table, routing_settings: BucketIndexSettings, parser: str) -> pa.Table:
    """``batch`` with :data:`BUCKET_ID_COL`: each record's bucket."""
    ids = bucket_ids(batch.column(RECORD_KEY), routing_settings.hash_fields, routing_settings.num_buckets, parser)
    return batch.append_column(BUCKET_ID_COL, pa.array(ids, pa.int32()))


def new_bucket_pairs(batch: pa.Table, routing: BucketRouting) -> list[tuple[str, int]]:
    """The (partition, bucket) pairs of ``batch``'s upserts whose bucket has no group yet
    (a delete never creates a group)."""
    upserts = batch.select([PARTITION_PATH, BUCKET_ID_COL, OP_COL]).filter(
        pc.invert(pc.is_in(batch.column(OP_COL), value_set=DELETE_OPS)))
    pairs = upserts.group_by([PARTITION_PATH, BUCKET_ID_COL]).aggregate([])
    return [(p, b) for p, b in zip(pairs.column(PARTITION_PATH).to_pylist(), pairs.column(BUCKET_ID_COL).to_pylist())
            if routing.file_id(p, b) is None]


def locate_by_bucket(batch: pa.Table, locations: Mapping[tuple[str, int], str], num_buckets: int) -> pa.Table:
    """``batch`` (with :data:`BUCKET_ID_COL`) located: ``_hoodie_loc_part`` / ``_hoodie_loc_file``
    are the record's bucket group in its partition, null where the bucket has no group
    (deletes of keys that cannot exist). The bucket column is dropped. Records are matched
    to groups by one integer per (partition, bucket), ``partition code * num_buckets +
    bucket``: joining partition and bucket as text cost a string per record."""
    out = batch.drop_columns([BUCKET_ID_COL])
    if not locations:
        none = pa.nulls(batch.num_rows, pa.string())
        return out.append_column(LOC_PART, none).append_column(LOC_FILE, none)
    parts = sorted({p for p, _b in locations})
    code = {p: i for i, p in enumerate(parts)}
    pairs = list(locations.items())
    wanted = pa.array([code[p] * num_buckets + b for (p, b), _f in pairs], pa.int64())
    ids = pa.array([f for _k, f in pairs], pa.string())
    part_code = pc.index_in(batch.column(PARTITION_PATH), value_set=pa.array(parts, pa.string())).cast(pa.int64())
    where = pc.add(pc.multiply(part_code, num_buckets), batch.column(BUCKET_ID_COL).cast(pa.int64()))
    file_ids = ids.take(pc.index_in(where, value_set=wanted))
    part = pc.if_else(pc.is_valid(file_ids), batch.column(PARTITION_PATH), pa.scalar(None, pa.string()))
    return out.append_column(LOC_PART, part).append_column(LOC_FILE, file_ids)


def tag_by_bucket(batch: pa.Table, routing: BucketRouting) -> pa.Table:
    """The in-process tagging: bucket ids, new groups named, records located (``routing``:
    a simple bucket index's, or a consistent-hashing ring's with the same interface)."""
    batch = routing.id_function()(batch)
    routing.create(new_bucket_pairs(batch, routing))
    located = locate_by_bucket(batch, routing.locations(), routing.width)
    duplicate = routing.duplicates()
    return duplicate(located) if duplicate is not None else located


def bucket_counts_known(update_counts: Mapping[tuple[str, str], int], routing: BucketRouting
                        ) -> tuple[dict[tuple[str, str], int], list[tuple[str, str, int]]]:
    """Records per existing group, and (partition, new file id, records) per new group."""
    new_ids = {fid: p for (p, _b), fid in routing.created.items()}
    existing = {k: n for k, n in update_counts.items() if k[1] not in new_ids}
    created = [(p, fid, n) for (p, fid), n in sorted(update_counts.items()) if fid in new_ids]
    return existing, created


def max_bucket(files: Sequence[ExistingFile]) -> int:
    """The highest bucket number of bucket-named groups, -1 when none (reports)."""
    ids = [bucket_of_file_id(f.file_id) for f in files if is_bucket_file_id(f.file_id)]
    return int(np.max(ids)) if ids else -1
