"""Test helper: do a table's statistics partitions describe exactly the files on storage?

- ``column_stats``: every file of the latest slices (base and log) has a live record per
  indexed column, every live record equals what we compute from its file, and none names a
  file storage lacks (a partition built on an existing table covers its latest slices, as
  Hudi's initialization does; older versions not yet cleaned have none);
- ``partition_stats``: per partition and column, the range covers the range of every file of
  the latest file slices (the counts only grow: Hudi merges each commit's delta by summing);
- ``bloom_filters``: every base file's record holds the footer's filter, and none names a
  file storage lacks.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import fastavro

from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.bloom_filter_index import bloom_filter_of, read_footer_bloom_filter
from airflow_hoodie.table.metadata_table.column_stats import (
    FileColumnStats,
    column_stats_records,
    read_file_column_ranges,
    read_log_column_ranges,
    unwrap_value,
)
from airflow_hoodie.table.metadata_table.index_keys import bloom_filter_key, partition_stats_key
from airflow_hoodie.table.metadata_table.metadata_record import encode_record, metadata_record_schema
from airflow_hoodie.table.metadata_table.partition_stats import partition_ranges
from airflow_hoodie.actions.metadata_table.stats_index_writer import indexed_columns
from airflow_hoodie.table.metadata_table.partitions import listed_partitions
from airflow_hoodie.table.metadata_table.stats_partitions import index_version
from airflow_hoodie.table.metadata_table.stats_reader import index_partition_files, read_index_records


def data_files(base: Path | str) -> dict[str, list[str]]:
    """partition -> data file names on storage."""
    out: dict[str, list[str]] = {}
    for root, _dirs, names in os.walk(base):
        rel = os.path.relpath(root, base)
        if rel.split(os.sep)[0] == ".hoodie":
            continue
        for n in names:
            if n.endswith(".parquet") or ".log." in n:
                out.setdefault("" if rel == "." else rel, []).append(n)
    return out


def _valid_instants(table: HoodieTable) -> set[str]:
    """Completed instants whose log blocks still count (a rollback's targets do not)."""
    from airflow_hoodie.table.metadata import avro_codec  # noqa: PLC0415

    timeline = table.reload_timeline()
    done = {i.timestamp for i in timeline.instants if i.is_completed}
    for inst in timeline.instants:
        if inst.is_completed and inst.action in ("rollback", "restore"):
            meta = avro_codec.deserialize(timeline.read_details(inst))
            done -= set(meta.get("commitsRollback") or [])
            for rbs in (meta.get("hoodieRestoreMetadata") or {}).values():
                for rb in rbs or []:
                    done -= set(rb.get("commitsRollback") or [])
    return done


def _has_records(table: HoodieTable, path: str, valid: set[str]) -> bool:
    from airflow_hoodie.table.log.log_block import BlockType  # noqa: PLC0415
    from airflow_hoodie.table.log.log_reader import read_log_blocks  # noqa: PLC0415

    return any(b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.DELETE)
               and b.instant_time in valid for b in read_log_blocks(table.storage, path))


def _plain(record: dict[str, Any], version: int) -> dict[str, Any]:
    """The record as it decodes, without meta fields (a compacted base names its file)."""
    schema = fastavro.parse_schema(metadata_record_schema(version))
    decoded = fastavro.schemaless_reader(io.BytesIO(encode_record(record, version)), schema)
    return {k: v for k, v in decoded.items() if not k.startswith("_hoodie_")}


def assert_stats_describe_storage(base: Path | str) -> dict[str, int]:
    """Assert the statistics partitions match storage; returns how many records were checked."""
    table = HoodieTable.load(str(base))
    version = table.config.table_version
    listed = listed_partitions(table)
    files = data_files(base)
    checked = {"column_stats": 0, "partition_stats": 0, "bloom_filters": 0}
    path_of = {(p, n): os.path.join(str(base), p, n) for p, names in files.items() for n in names}
    ranges_of: dict[tuple[str, str], list[Any]] = {}
    if "column_stats" in listed or "partition_stats" in listed:
        columns = indexed_columns(table)
        valid = _valid_instants(table)
        for (p, n), path in sorted(path_of.items()):
            if ".log." in n and not _has_records(table, path, valid):
                continue  # a log file of rollback command blocks only: Hudi keeps no stats for it
            ranges_of[(p, n)] = (read_file_column_ranges(table.storage, path, columns) if n.endswith(".parquet")
                                 else read_log_column_ranges(table.storage, path, columns or [], valid))
    # a snapshot reads the latest file slices: they must all be described (a partition built
    # on an existing table covers those only, as Hudi's initialization does)
    latest = set()
    for fs in table.file_system_view().latest_merged_file_slices():
        latest.update((fs.partition_path, f.file_name) for f in ([fs.base_file] if fs.base_file else [])
                      + list(fs.log_files))
    if "column_stats" in listed:
        live = read_index_records(index_partition_files(table, "column_stats"))
        for (p, n), ranges in ranges_of.items():
            expected = column_stats_records([FileColumnStats(p, n, ranges)], index_version(table), version)
            present = [k for k in expected if k in live]
            if (p, n) in latest:
                assert len(present) == len(expected), f"no column stats for {p}/{n}"
            for key in present:
                assert _plain(live[key], version) == _plain(expected[key], version), \
                    (key, _plain(live[key], version), _plain(expected[key], version))
            checked["column_stats"] += len(present)
        described = {r["ColumnStatsMetadata"]["fileName"] for r in live.values()}
        stale = described - {n for (_p, n) in path_of}
        assert not stale, f"column stats of files not on storage: {sorted(stale)}"
    if "partition_stats" in listed:
        live = read_index_records(index_partition_files(table, "partition_stats"))
        by_part = partition_ranges([(p, r) for (p, n), r in ranges_of.items() if (p, n) in latest])
        for part, cols in by_part.items():
            for column, rng in cols.items():
                rec = live.get(partition_stats_key(column, part))
                assert rec is not None, f"no partition stats for {part} {column}"
                m = rec["ColumnStatsMetadata"]
                lo, hi = unwrap_value(m["minValue"]), unwrap_value(m["maxValue"])
                if rng.min is not None:
                    assert lo is not None and _cmp(lo, rng) <= 0 and _cmp(hi, rng, True) >= 0, (part, column, m, rng)
                checked["partition_stats"] += 1
    if "bloom_filters" in listed:
        live = read_index_records(index_partition_files(table, "bloom_filters"))
        wanted = {bloom_filter_key(p, n): path for (p, n), path in path_of.items() if n.endswith(".parquet")}
        in_latest = {bloom_filter_key(p, n) for (p, n) in latest}
        for key, path in wanted.items():
            footer = read_footer_bloom_filter(table.storage, path)
            if footer is None or (key not in live and key not in in_latest):
                continue
            assert key in live, f"no bloom filter record for {path}"
            assert bloom_filter_of(live[key]) == footer, path
            checked["bloom_filters"] += 1
        assert not set(live) - set(wanted), "bloom filters of files not on storage"
    return checked


def _cmp(value: Any, rng: Any, upper: bool = False) -> int:
    """value (as the record holds it) against the range's min (or max)."""
    bound = rng.max if upper else rng.min
    if rng.value_type == "DECIMAL" and isinstance(value, bytes):
        value = int.from_bytes(value, "big", signed=True)
        if not isinstance(bound, int):
            raise AssertionError(f"decimal bound {bound!r}")
    return (value > bound) - (value < bound)
