"""Test helpers for expression indexes: define one as Hudi's ``CREATE INDEX`` does (the
``index.json`` entry, then the partition built from the latest file slices), and check that an
``expr_index_*`` partition describes exactly the data files on storage:

- every file of the latest slices (base and log) with rows has a live record (a file without
  rows, such as a log file of deletes only, has none: Hudi's per-file aggregation yields nothing); every live per-file record
  equals what ``f(col)`` recomputed from that file's rows gives (column_stats: min, max, null
  count, non-null count, file size; bloom_filters: the filter of the Java text of each value);
- no per-file record names a file storage lacks (deleted files have tombstones);
- column_stats indexes: per data partition, the partition-level record covers every latest file.
The values are recomputed with the evaluator tested against Spark (``ExpressionIndexDefinition.apply``),
reading files directly with pyarrow and the log reader, not through the writer's code (a log
file's rows are its valid data blocks' rows: the same as the writer's merged read of that file
while, as in every table these tests write, a log file holds each key once and no delete of a
key it also writes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.metadata_table.expression_index_writer import (
    initialize_expression_index,
)
from airflow_hoodie.table.bloom.bloom_filter import create_bloom_filter
from airflow_hoodie.table.expression_index.definitions import (
    ExpressionIndexDefinition,
    definitions_of,
)
from airflow_hoodie.table.expression_index.expression import bloom_key_strings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.data_block import decode_data_block
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import read_log_blocks
from airflow_hoodie.table.metadata_table.bloom_filter_index import bloom_filter_of
from airflow_hoodie.table.metadata_table.column_stats import (
    _arrow_value_type,
    range_from_payload,
)
from airflow_hoodie.table.metadata_table.index_keys import (
    bloom_filter_key,
    column_stats_key,
    expression_partition_stats_key,
)
from airflow_hoodie.table.metadata_table.partitions import listed_partitions
from airflow_hoodie.table.metadata_table.stats_pruning import stored_range
from airflow_hoodie.table.metadata_table.stats_reader import (
    index_partition_files,
    read_index_records,
)
from tests.actions.table_versions import _CURRENT
from tests.table.metadata_table.stats_check import (
    _has_records,
    _valid_instants,
    data_files,
)


@pytest.fixture
def version_9(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """Tables of version 9 (expression indexes are Hudi 1.x's; 8 when parametrized so, indirectly),
    without the clock-skew wait."""
    import dataclasses

    from airflow_hoodie import config as hoodie_config
    from airflow_hoodie.config_keys.time_generator import MAX_EXPECTED_CLOCK_SKEW_MS

    hoodie_config.load_registry()
    key = hoodie_config._REGISTRY[MAX_EXPECTED_CLOCK_SKEW_MS]
    monkeypatch.setitem(hoodie_config._REGISTRY, MAX_EXPECTED_CLOCK_SKEW_MS, dataclasses.replace(key, default="0"))
    monkeypatch.setitem(_CURRENT, "version", getattr(request, "param", 9))
    yield


def define_index(base: str, name: str, index_type: str, function: str, source: str, *, index_version: str = "V2",
                 **options: str) -> ExpressionIndexDefinition:
    """``CREATE INDEX name ON t USING index_type(source) OPTIONS(expr=function, ...)`` (Hudi 1.1
    defines V2 indexes on table version 9, V1 on 8)."""
    definition = ExpressionIndexDefinition(f"expr_index_{name}", index_type, function, source,
                                           {"expr": function, **options}, index_version)
    initialize_expression_index(HoodieTable.load(base), definition)
    return definition


def _file_values(table: HoodieTable, path: str, source: str, valid: set[str]) -> pa.Array:
    if path.endswith(".parquet"):
        return pq.read_table(path, columns=[source]).column(source).combine_chunks()
    tables = [decode_data_block(b) for b in read_log_blocks(table.storage, path)
              if not b.corrupt and b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
              and b.instant_time in valid]
    if not tables:
        return pa.array([], pa.null())
    return pa.concat_tables(tables, promote_options="default").column(source).combine_chunks()


def _primitive(value: pa.Scalar) -> Any:
    if not value.is_valid:
        return None
    if pa.types.is_date32(value.type):
        return value.cast(pa.int32()).as_py()
    if pa.types.is_timestamp(value.type):
        return value.cast(pa.int64()).as_py()
    return value.as_py()


def _expected_range(values: pa.Array) -> dict[str, Any]:
    mm = pc.min_max(values) if len(values) else None
    return {"min": _primitive(mm["min"]) if mm else None, "max": _primitive(mm["max"]) if mm else None,
            "null_count": values.null_count, "value_count": len(values) - values.null_count}


def _check_stats(definition: ExpressionIndexDefinition, live: dict[str, Any], expected: dict[tuple[str, str], Any],
                 sizes: dict[tuple[str, str], int], latest: set[tuple[str, str]]) -> int:
    checked = 0
    for (p, n), values in expected.items():
        rec = live.get(column_stats_key(definition.source_field, p, n))
        if rec is None:
            assert (p, n) not in latest, f"{definition.name}: no record for latest file {p}/{n}"
            continue
        payload = rec["ColumnStatsMetadata"]
        assert payload["columnName"] == definition.source_field and payload["fileName"] == n
        rng = range_from_payload(payload) or stored_range(payload, _arrow_value_type(values.type) or "NULL", None)
        want = _expected_range(values)
        got = {"min": rng.min, "max": rng.max, "null_count": rng.null_count, "value_count": rng.value_count}
        assert got == want, (definition.name, p, n, got, want)
        assert (payload["totalSize"], payload["totalUncompressedSize"]) == (sizes[(p, n)], 2 * sizes[(p, n)]), (p, n)
        checked += 1
    return checked


def _check_partition_records(definition: ExpressionIndexDefinition, live: dict[str, Any],
                             expected: dict[tuple[str, str], Any], latest: set[tuple[str, str]]) -> None:
    for part in {p for (p, _n) in latest}:
        rec = live.get(expression_partition_stats_key(definition.source_field, part))
        assert rec is not None, f"{definition.name}: no partition-level record for {part}"
        for (p, n), values in expected.items():
            payload = rec["ColumnStatsMetadata"]
            rng = range_from_payload(payload) or stored_range(payload, _arrow_value_type(values.type) or "NULL", None)
            want = _expected_range(values)
            if p != part or (p, n) not in latest or want["min"] is None:
                continue
            assert rng.min <= want["min"] and rng.max >= want["max"], (definition.name, part, n, rng, want)


def _check_blooms(definition: ExpressionIndexDefinition, live: dict[str, Any], expected: dict[tuple[str, str], Any],
                  latest: set[tuple[str, str]]) -> int:
    checked = 0
    for (p, n), values in expected.items():
        rec = live.get(bloom_filter_key(p, n))
        if rec is None:
            assert (p, n) not in latest, f"{definition.name}: no bloom filter for latest file {p}/{n}"
            continue
        keys = bloom_key_strings(values, definition.function)
        opts = definition.options  # the index's options over the data table's default bloom keys
        want = create_bloom_filter(int(opts.get("numentries", 60000)), float(opts.get("fpp", 0.000000001)),
                                   opts.get("filtertype", "DYNAMIC_V0"), int(opts.get("maxentries", 100000)))
        want.add_many(keys)
        got = bloom_filter_of(rec)
        assert got == want, (definition.name, p, n)
        assert all(got.might_contain(k) for k in keys)
        checked += 1
    return checked


def assert_index_describes_storage(base: str, name: str, time_zone: str = "UTC") -> int:
    """Assert ``expr_index_<name>`` matches the data files on storage; returns the files checked."""
    table = HoodieTable.load(base)
    partition = f"expr_index_{name}"
    assert partition in listed_partitions(table), partition
    definition = definitions_of(table, [partition])[partition]
    valid = _valid_instants(table)
    expected: dict[tuple[str, str], pa.Array] = {}
    sizes: dict[tuple[str, str], int] = {}
    for p, names in data_files(base).items():
        for n in names:
            path = os.path.join(base, p, n)
            if ".log." in n and not _has_records(table, path, valid):
                continue
            values = _file_values(table, path, definition.source_field, valid)
            if len(values) == 0:
                continue  # no rows (a log file of deletes only): Hudi's aggregation yields no record for it
            expected[(p, n)] = definition.apply(values, time_zone)
            sizes[(p, n)] = Path(path).stat().st_size
    latest = set()
    for fs in table.file_system_view().latest_merged_file_slices():
        latest.update((fs.partition_path, f.file_name) for f in ([fs.base_file] if fs.base_file else [])
                      + list(fs.log_files))
    live = read_index_records(index_partition_files(table, partition))
    if definition.index_type == "column_stats":
        checked = _check_stats(definition, live, expected, sizes, latest)
        _check_partition_records(definition, live, expected, latest)
        per_file = [r["ColumnStatsMetadata"]["fileName"] for r in live.values() if int(r["type"]) == 3]
    else:
        checked = _check_blooms(definition, live, expected, latest)
        keys = {bloom_filter_key(p, n) for (p, n) in expected}
        per_file = [k for k in live if k not in keys]
        assert not per_file, f"{definition.name}: bloom filters of files not on storage"
    stale = set(per_file) - {n for (_p, n) in expected}
    assert not stale, f"{definition.name}: records of files not on storage: {sorted(stale)}"
    return checked
