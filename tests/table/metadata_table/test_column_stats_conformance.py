"""Our column_stats, partition_stats and record keys against the ones real Hudi 1.1 wrote.

For every v9 table of the conformance corpus with a metadata table, every live column-stats
record (keys byte for byte, values as Avro decodes them) equals the record we compute from the
same data file, parquet base files and log files alike; Hudi's per-commit partition-stats
blocks equal the ranges we compute over that commit's files; the record index's keys hash
to the file groups Hudi put them in. Then copies of those tables go through an upsert, a
compaction (MOR) and a clean, and their statistics still describe exactly the files on
storage."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import fastavro
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.file_group.file_naming import parse_base_file_name
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.metadata_table.column_stats import (
    FileColumnStats,
    column_stats_records,
    encode_records,
    read_file_column_ranges,
)
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.index_keys import column_stats_key, partition_id, xxh64
from airflow_hoodie.table.metadata_table.partition_stats import partition_ranges, partition_stats_records
from airflow_hoodie.table.metadata_table.record_index import file_group_index
from airflow_hoodie.actions.metadata_table.stats_index_writer import indexed_columns
from airflow_hoodie.table.metadata_table.stats_partitions import index_version
from airflow_hoodie.table.read import read_table
from tests.table.metadata_table.stats_check import assert_stats_describe_storage, data_files
from tests.table.table_files import copy_conformance_table

#: the v9 tables Hudi wrote with column_stats and partition_stats
STATS_TABLES = ["cow/v9_timebasedkeygen_nonhivestyle", "cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"]
#: the ones we also maintain (the others carry secondary indexes, which we refuse)
MAINTAINED = ["cow/v9_timebasedkeygen_nonhivestyle"]
FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def test_xxh64_matches_the_reference_vectors():
    # the XXH64 reference values for seed 0 (xxHash's test suite)
    assert xxh64(b"", 0) == 0xEF46DB3751D8E999
    assert xxh64(b"a", 0) == 0xD24EC4F1A98C6E5B
    assert xxh64(b"abc", 0) == 0x44BC2CF5AD770999
    assert xxh64(b"Nobody inspects the spammish repetition", 0) == 0xFBCEA83C8A378BF1


def test_keys_are_hudis():
    # a key taken from the column_stats partition Hudi 1.1 wrote for cow/v9_timebasedkeygen_nonhivestyle
    assert column_stats_key("currency", "2024/01/15/11",
                            "73a81ee8-5d9c-420e-bab2-4626f8756100-0_1-27-59_20260403183837738.parquet") \
        == "/m6lxu4Dh5w=8Qv4auP2/Bg=oPFvgxf6jZZPAwYC+QqCEQ=="
    assert partition_id("2024/01/17/14") == "wn463QxjJD8="


def _raw_blocks(mdt_partition: Path):
    """(file name, instant, [(key, value bytes)], schema) of every HFile the partition holds."""
    for f in sorted(mdt_partition.iterdir()):
        if f.name.endswith(".hfile"):
            h = HFile(f.read_bytes(), f.name)
            yield f.name, None, list(h.records()), h.schema_json
        elif ".log." in f.name:
            for b in read_log_blocks_from_bytes(f.read_bytes()):
                if b.content and b.block_type == 4:  # HFILE_DATA
                    h = HFile(b.content, f.name)
                    yield f.name, b.instant_time, list(h.records()), b.schema


@pytest.mark.parametrize("name", STATS_TABLES)
def test_column_stats_records_equal_hudis(conformance_next, name):
    base = conformance_next / "tables" / name
    table = HoodieTable.load(str(base))
    assert index_version(table) == "V2"
    columns = indexed_columns(table)
    ours: dict[str, bytes] = {}
    for part, names in data_files(base).items():
        for n in names:
            path = str(base / part / n)
            from airflow_hoodie.table.metadata_table.column_stats import read_log_column_ranges  # noqa: PLC0415
            ranges = (read_file_column_ranges(table.storage, path, columns) if n.endswith(".parquet")
                      else read_log_column_ranges(table.storage, path, columns))
            for k, v in encode_records(column_stats_records([FileColumnStats(part, n, ranges)], "V2", 9), 9):
                ours[k.decode()] = v
    compared = raw_equal = 0
    folder = base / ".hoodie" / "metadata" / "column_stats"
    for fname, _instant, records, schema in _raw_blocks(folder):
        parsed = fastavro.parse_schema(json.loads(schema))
        index = int(re.search(r"col-stats-(\d{4})-0", fname).group(1))
        for key, value in records:
            k = key.decode()
            theirs = fastavro.schemaless_reader(io.BytesIO(value), parsed)
            if theirs["ColumnStatsMetadata"]["isDeleted"]:
                continue
            assert k in ours, f"Hudi has {k} ({theirs['ColumnStatsMetadata']['fileName']}), we would not write it"
            mine = fastavro.schemaless_reader(io.BytesIO(ours[k]), parsed)
            assert {a: b for a, b in mine.items() if not a.startswith("_hoodie_")} == \
                {a: b for a, b in theirs.items() if not a.startswith("_hoodie_")}, k
            # the key lands in the file group Hudi put it in
            assert file_group_index(k, 2) == index
            compared += 1
            if theirs.get("_hoodie_file_name") is None:  # log blocks carry no meta values: byte equal
                assert value == ours[k], k
                raw_equal += 1
    assert compared >= 100 and raw_equal > 0


def test_partition_stats_blocks_equal_the_ranges_of_their_commits_files(conformance_next):
    base = conformance_next / "tables" / "cow/v9_timebasedkeygen_nonhivestyle"
    table = HoodieTable.load(str(base))
    columns = indexed_columns(table)
    folder = base / ".hoodie" / "metadata" / "partition_stats"
    checked = 0
    for _fname, instant, records, _schema in _raw_blocks(folder):
        if instant is None or instant.startswith("0000000000000000"):
            continue
        # Hudi's delta: the range over the latest base file of every file group of each
        # partition that instant wrote to, as of that instant
        touched = {p for p, names in data_files(base).items() for n in names if n.endswith(f"_{instant}.parquet")}
        assert touched
        latest: dict[tuple[str, str], str] = {}
        for p in touched:
            for n in data_files(base)[p]:
                parsed = parse_base_file_name(n)
                if parsed is not None and parsed.instant <= instant:
                    if (p, parsed.file_id) not in latest or latest[(p, parsed.file_id)] < n.rsplit("_", 1)[1]:
                        latest[(p, parsed.file_id)] = n
        ranges = [(p, read_file_column_ranges(table.storage, str(base / p / n), columns))
                  for (p, _fid), n in latest.items()]
        expected = dict(encode_records(partition_stats_records(partition_ranges(ranges), "V2", 9), 9))
        assert dict(records) == expected, instant
        checked += 1
    assert checked == 3


def test_record_index_keys_hash_to_hudis_file_groups(conformance_next):
    folder = conformance_next / "tables" / "cow/v9_timebasedkeygen_nonhivestyle" / ".hoodie" / "metadata" / "record_index"
    groups = {int(re.search(r"record-index-(\d{4})-0", f.name).group(1)) for f in folder.iterdir()
              if "record-index-" in f.name}
    seen = 0
    for fname, _instant, records, _schema in _raw_blocks(folder):
        index = int(re.search(r"record-index-(\d{4})-0", fname).group(1))
        for key, _value in records:
            assert file_group_index(key.decode(), len(groups)) == index
            seen += 1
    assert seen > 0


@pytest.mark.parametrize("name", STATS_TABLES)
def test_record_index_records_equal_hudis(conformance_next, name):
    """Every record-index record Hudi wrote re-encodes to the same bytes from the location it
    names, and the live ones name the file group that holds the key in the latest snapshot."""
    from airflow_hoodie.table.metadata_table.record_index import location_of, read_record_index, record_index_records

    base = conformance_next / "tables" / name
    table = HoodieTable.load(str(base))
    checked = 0
    for fname, _instant, records, schema in _raw_blocks(base / ".hoodie" / "metadata" / "record_index"):
        parsed = fastavro.parse_schema(json.loads(schema))
        for key, value in records:
            rec = fastavro.schemaless_reader(io.BytesIO(value), parsed)
            info = rec["recordIndexMetadata"]
            part, fid = location_of(info)
            base_name = rec.get("_hoodie_file_name")
            ours = dict(record_index_records({key.decode(): (part, fid, info["instantTime"])}, base_name, 9))
            assert ours[key] == value, (fname, key)
            checked += 1
    assert checked > 0
    snapshot = read_table(str(base))
    live = read_record_index(table, snapshot.column("_hoodie_record_key").to_pylist())
    holders: dict[str, set] = {}
    for key, fname, part in zip(snapshot.column("_hoodie_record_key").to_pylist(),
                                snapshot.column("_hoodie_file_name").to_pylist(),
                                snapshot.column("_hoodie_partition_path").to_pylist()):
        holders.setdefault(key, set()).add((part, parse_base_file_name(fname).file_id))
    for key, where in holders.items():  # a key inserted twice lives in two groups; the index names one
        assert live[key] in where, key


@pytest.mark.parametrize("name", STATS_TABLES)
def test_fixture_stats_describe_their_files(conformance_next, name):
    checked = assert_stats_describe_storage(conformance_next / "tables" / name)
    assert checked["column_stats"] > 0 and checked["partition_stats"] > 0


@pytest.mark.parametrize("name", MAINTAINED)
def test_stats_stay_true_through_upsert_compaction_and_clean(conformance_next, tmp_path, name):
    base = copy_conformance_table(conformance_next, name, tmp_path)
    table = HoodieTable.load(str(base))
    keys = table.config.record_key_fields
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": ",".join(keys)}
    stored = read_table(str(base))
    rows = stored.drop_columns([n for n in stored.column_names if n.startswith("_hoodie_")])
    for i in range(3):  # upserts rewriting the same files, so a clean has versions to remove
        write_arrow(str(base), rows.slice(i, 2), "upsert", cfg)
        assert_stats_describe_storage(base)
    if table.is_mor:
        sched = c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig(cfg), force=True)
        assert sched.instant is not None
        c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor(), HoodieConfig(cfg))
        assert_stats_describe_storage(base)
    before = sum(len(v) for v in data_files(base).values())
    cl.run_clean(HoodieTable.load(str(base)), HoodieConfig(
        {**FAST, cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert sum(len(v) for v in data_files(base).values()) < before  # the clean deleted files
    checked = assert_stats_describe_storage(base)
    assert checked["column_stats"] > 0


#: Hudi-written MOR tables without statistics: we build them, then keep them through the services
BUILT_ON = ["mor/v9_txns_nonpart_nometa", "mor/v9_nonpartitioned_rollback", "mor/v9_txns_complex_nometa"]


@pytest.mark.parametrize("name", BUILT_ON)
def test_stats_built_on_hudi_mor_tables_stay_true(conformance_next, tmp_path, name):
    base = copy_conformance_table(conformance_next, name, tmp_path)
    table = HoodieTable.load(str(base))
    keys = table.config.record_key_fields
    stats = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true",
             "hoodie.metadata.index.bloom.filter.enable": "true"}
    cfg = {**FAST, **stats, "hoodie.datasource.write.recordkey.field": ",".join(keys)}
    stored = read_table(str(base))
    rows = stored.drop_columns([n for n in stored.column_names if n.startswith("_hoodie_")])
    write_arrow(str(base), rows.slice(0, 2), "upsert", cfg)
    listed = HoodieTable.load(str(base)).config.get("hoodie.table.metadata.partitions")
    assert {"column_stats", "partition_stats", "bloom_filters"} <= set(listed.split(","))
    assert assert_stats_describe_storage(base)["column_stats"] > 0
    sched = c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig(cfg), force=True)
    assert sched.instant is not None
    c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor(), HoodieConfig(cfg))
    assert_stats_describe_storage(base)
    cl.run_clean(HoodieTable.load(str(base)), HoodieConfig(
        {**FAST, cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert_stats_describe_storage(base)
    flt = [(keys[0], "=", rows.column(keys[0])[0].as_py())]
    assert read_table(str(base), filters=flt).num_rows == read_table(str(base), filters=flt,
                                                                      metadata_enable=False).num_rows == 1
