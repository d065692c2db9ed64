"""Attack: the metadata table's indexes beyond ``files`` after every action on v8/v9 tables.
The lake sweep of test_attack_lake_sequences.py checks ``files``, ``record_index`` and
``column_stats``; here the same random actions (plus insert_overwrite and
insert_overwrite_table) run with ``partition_stats`` and ``bloom_filters`` on too, and after
each one, besides the sweep's own checks:

- every key of every latest base file is in that file's ``bloom_filters`` record (a key
  missing there is a BLOOM lookup that misses a stored record: a duplicate, or an update
  written as an insert);
- ``partition_stats`` bound every value the snapshot read returns from that partition (an
  unbounded value is a row a filtered read prunes away);
- the statistics helper (tests/table/metadata_table/stats_check.py) finds them equal to storage.

The same checks run on copies of Hudi 1.x tables of the conformance corpus that already carry
a record index and partition stats, after our writes and services on them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.bloom_filter_index import bloom_filter_of, read_footer_bloom_filter
from airflow_hoodie.table.metadata_table.index_keys import bloom_filter_key, partition_stats_key
from airflow_hoodie.actions.metadata_table.stats_index_writer import indexed_columns
from airflow_hoodie.table.metadata_table.partitions import listed_partitions
from airflow_hoodie.table.metadata_table.stats_reader import index_partition_files, read_index_records
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import Lake, lake_config, lake_rows, stored_value
from tests.table.metadata_table.stats_check import assert_stats_describe_storage

INDEXES = {"hoodie.metadata.index.partition.stats.enable": "true", "hoodie.metadata.index.bloom.filter.enable": "true"}


def assert_bloom_filters_hold_every_key(base: str, step: str) -> int:
    """Every record key of every latest base file is in its bloom_filters record, and every
    such file has one (Hudi's BLOOM lookup through the metadata table fails on a candidate
    file without it, an empty one included); returns how many keys were checked."""
    table = HoodieTable.load(base)
    if "bloom_filters" not in listed_partitions(table):
        return 0
    live = read_index_records(index_partition_files(table, "bloom_filters"))
    checked = 0
    for fs in table.file_system_view().latest_merged_file_slices():
        if fs.base_file is None:
            continue
        path = os.path.join(base, fs.partition_path, fs.base_file.file_name)
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist()
        record = live.get(bloom_filter_key(fs.partition_path, fs.base_file.file_name))
        assert record is not None, f"no bloom filter for {fs.base_file.file_name} after {step}"
        bloom = bloom_filter_of(record)
        assert bloom is not None, f"a tombstone for the live {fs.base_file.file_name} after {step}"
        missing = [k for k in keys if not bloom.might_contain(k)]
        assert not missing, f"bloom filter of {fs.base_file.file_name} lacks {missing} after {step}"
        checked += len(keys)
    return checked


def assert_partition_stats_bound_the_rows(base: str, step: str) -> int:
    """Each value a snapshot read returns lies within its partition's partition_stats range;
    returns how many (partition, column) ranges were checked."""
    table = HoodieTable.load(base)
    if "partition_stats" not in listed_partitions(table):
        return 0
    live = read_index_records(index_partition_files(table, "partition_stats"))
    rows = read_table(base)
    columns = [col for col in (indexed_columns(table) or rows.column_names) if col in rows.column_names]
    checked = 0
    for part in set(rows.column("_hoodie_partition_path").to_pylist()):
        in_part = rows.filter(pc.equal(rows.column("_hoodie_partition_path"), part))
        for col in columns:
            arr = in_part.column(col)
            if arr.null_count == len(arr) or pa.types.is_boolean(arr.type):
                continue
            rec = live.get(partition_stats_key(col, part))
            assert rec is not None, f"no partition stats for {part!r}.{col} after {step}"
            m = rec["ColumnStatsMetadata"]
            lo, hi = stored_value(m["minValue"], arr.type), stored_value(m["maxValue"], arr.type)
            mm = pc.min_max(arr).as_py()
            assert lo is not None and hi is not None and lo <= mm["min"] and mm["max"] <= hi, \
                f"partition stats of {part!r}.{col} [{lo}, {hi}] miss [{mm['min']}, {mm['max']}] after {step}"
            checked += 1
    return checked


class IndexLake(Lake):
    """The lake sweep with partition_stats and bloom_filters on and two overwrites added."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.cfg.update(INDEXES)
        self.checked = {"bloom keys": 0, "partition ranges": 0}

    def overwrite(self, whole_table: bool = False) -> None:
        part = self.rng.choice(["p0", "p1"])
        rows = [{"id": f"o{self.ts}_{i}", "p": part, "ts": self.ts, "v": f"o{self.ts}", "d": float(i * 1000 - self.ts)}
                for i in range(self.rng.randrange(1, 4))]
        self.ts += 5
        operation = "insert_overwrite_table" if whole_table else "insert_overwrite"
        instant = write_arrow(self.base, lake_rows(rows), operation, self.cfg).instant
        for k in [k for k, row in self.model.items() if whole_table or row[0] == part]:
            del self.model[k], self.commit_of[k]
        for r in rows:
            self.sticky[r["id"]] = part
            self.model[r["id"]] = (r["p"], r["ts"], r["v"], r["d"])
            self.commit_of[r["id"]] = instant
        self.remember(instant, "write")

    def overwrite_table(self) -> None:
        self.overwrite(whole_table=True)

    def check(self, step: str) -> None:
        super().check(step)
        assert_stats_describe_storage(self.base)
        self.checked["bloom keys"] += assert_bloom_filters_hold_every_key(self.base, step)
        self.checked["partition ranges"] += assert_partition_stats_bound_the_rows(self.base, step)

    def actions(self) -> list:
        return [self.upsert, self.upsert, self.delete, self.compact, self.cluster, self.clean, self.archive,
                self.rollback, self.savepoint_or_restore, self.run_pending_compactions, self.overwrite,
                self.overwrite_table]


#: out-of-tree: HOODIE_ATTACK_INDEX_SEEDS=0,1,... runs a sweep
SEEDS = [int(s) for s in os.environ.get("HOODIE_ATTACK_INDEX_SEEDS", "3,4").split(",")]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_actions_keep_bloom_filters_and_partition_stats_true(tmp_path: Path, seed: int) -> None:
    import random

    rng = random.Random(seed)
    version, table_type = rng.choice([8, 9]), rng.choice(["COPY_ON_WRITE", "MERGE_ON_READ"])
    index = rng.choice(["BLOOM", "RECORD_INDEX"])
    lake = IndexLake(str(tmp_path / "t"), seed, version, table_type, "EVENT_TIME_ORDERING", index)
    lake.run(10)
    assert lake.checked["bloom keys"] > 0 and lake.checked["partition ranges"] > 0, lake.checked


def _bloom_config(version: int, table_type: str) -> dict[str, str]:
    cfg = lake_config(version, table_type, "EVENT_TIME_ORDERING", "BLOOM")
    cfg.update(INDEXES)
    return cfg


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_an_empty_base_file_keeps_a_bloom_filter(tmp_path: Path, version: int, table_type: str) -> None:
    """Hudi's write support puts the bloom filter into every base file's footer, empty or not
    (min/max keys only when there were keys); its BLOOM index, reading filters from the
    metadata table, fails on a file that has none there. A delete of a file group's last
    record (COW) or a compaction of it (MOR) writes such an empty file."""
    base = str(tmp_path / "t")
    cfg = _bloom_config(version, table_type)
    one = lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": 1.0}])
    write_arrow(base, one, "upsert", cfg)
    write_arrow(base, one, "delete", cfg)
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True)
        c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
    table = HoodieTable.load(base)
    files = [fs.base_file.file_name for fs in table.file_system_view().latest_merged_file_slices() if fs.base_file]
    assert len(files) == 1 and pq.read_metadata(os.path.join(base, "p0", files[0])).num_rows == 0
    assert read_footer_bloom_filter(table.storage, os.path.join(base, "p0", files[0])) is not None
    assert_bloom_filters_hold_every_key(base, "the delete of the last record")
