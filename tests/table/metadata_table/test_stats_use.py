"""Using the statistics partitions: data skipping in ``read_table(filters=...)`` and the
BLOOM index's lookup through the metadata table (``hoodie.bloom.index.use.metadata``).

Wherever stats are kept (v6 and v9, COW and MOR, our tables and Hudi's), a read with filters
returns exactly the rows of the same read without the metadata table, while reading fewer
file slices; an upsert tagged through the metadata table reads no parquet footer and writes
exactly what the footer path writes."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_hoodie.actions import index as index_module
from airflow_hoodie.table.metadata_table import stats_pruning
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import table_config, write
from tests.actions.table_versions import table_version  # noqa: F401 - the fixture
from tests.table.metadata_table.stats_check import assert_stats_describe_storage

STATS = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true",
         "hoodie.metadata.index.bloom.filter.enable": "true"}
CORPUS = ["cow/v9_timebasedkeygen_nonhivestyle", "cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"]


def _rows(ids: range, ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": [f"k{i:04d}" for i in ids], "p": [f"p{i // 20}" for i in ids], "ts": [ts] * len(ids),
        "v": pa.array([i * 10 + ts for i in ids], pa.int64()),
        "name": [f"n{i:04d}" for i in ids],
        "amount": pa.array([dt_dec(i) for i in ids], pa.decimal128(10, 2)),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
    })


def dt_dec(i: int):
    import decimal
    return decimal.Decimal(i) / 4


def _sorted(t: pa.Table) -> list[dict]:
    return sorted((r for r in t.drop_columns([c for c in t.column_names if c.startswith("_hoodie_")]).to_pylist()),
                  key=lambda r: repr(sorted(r.items(), key=lambda kv: kv[0])))


FILTERS = [
    [("v", "<", 100)],
    [("v", ">=", 590)],
    [("id", "=", "k0033")],
    [("id", "in", ["k0001", "k0045"])],
    [("name", ">", "n0050")],
    [("amount", "<=", 2)],
    [("day", ">", dt.date(2024, 2, 15))],
    [("p", "=", "p1"), ("v", ">", 300)],
    [("v", "=", -5)],
    [("v", "!=", 7)],
]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_pruned_reads_equal_full_reads(tmp_path, table_type, table_version, monkeypatch):  # noqa: F811
    base = str(tmp_path / "t")
    cfg = table_config(table_type, **STATS, **{"hoodie.parquet.small.file.limit": "0"})
    for start in range(0, 60, 20):  # file groups with disjoint ranges
        write(base, _rows(range(start, start + 20), 1), cfg)
    write(base, _rows(range(5, 12), 2), cfg)  # updates: logs on MOR, new versions on COW
    assert_stats_describe_storage(base)
    kept: list[int] = []
    real = stats_pruning.prune_slices_by_stats

    def spy(table, slices, filters, schema=None):
        out = real(table, slices, filters, schema)
        kept.append(len(slices) - len(out))
        return out

    real_parts = stats_pruning.prune_partitions_by_stats

    def spy_parts(table, partitions, filters, schema=None):
        partitions = set(partitions)
        out = real_parts(table, partitions, filters, schema)
        kept.append(len(partitions) - len(out))
        return out

    monkeypatch.setattr("airflow_hoodie.table.read.prune_slices_by_stats", spy)
    monkeypatch.setattr("airflow_hoodie.table.read.prune_partitions_by_stats", spy_parts)
    for flt in FILTERS:
        pruned = read_table(base, filters=flt)
        full = read_table(base, filters=flt, metadata_enable=False)
        assert _sorted(pruned) == _sorted(full), flt
        ro = read_table(base, filters=flt, query_type="read_optimized")
        assert _sorted(ro) == _sorted(read_table(base, filters=flt, query_type="read_optimized",
                                                 metadata_enable=False)), flt
    assert sum(kept) > 0  # partitions or files were skipped


@pytest.mark.parametrize("name", CORPUS)
def test_pruned_reads_of_hudi_tables_equal_full_reads(conformance_next, name):
    base = str(conformance_next / "tables" / name)
    full = read_table(base, metadata_enable=False)
    cols = [c for c in ("txn_id", "amount", "txn_ts", "currency", "txn_date", "merchant_name") if c in full.column_names]
    for col in cols:
        values = sorted(v for v in full.column(col).to_pylist() if v is not None)
        if not values:
            continue
        mid = values[len(values) // 2]
        for flt in ([(col, "=", mid)], [(col, "<", mid)], [(col, ">=", mid)], [(col, "in", [values[0], values[-1]])]):
            assert _sorted(read_table(base, filters=flt)) == _sorted(read_table(base, filters=flt,
                                                                                metadata_enable=False)), flt


def test_bloom_lookup_through_the_metadata_table_reads_no_footer(tmp_path, table_version, monkeypatch):  # noqa: F811
    footers: list[str] = []
    real_footer = index_module.file_footer

    def counting(ref):
        footers.append(ref.base_file)
        return real_footer(ref)

    monkeypatch.setattr(index_module, "file_footer", counting)
    results = {}
    for use in ("false", "true"):
        base = str(tmp_path / use)
        cfg = table_config("COPY_ON_WRITE", **STATS, **{"hoodie.index.type": "BLOOM",
                                                      "hoodie.bloom.index.use.metadata": use,
                                                      "hoodie.parquet.small.file.limit": "0"})
        for start in range(0, 60, 20):
            write(base, _rows(range(start, start + 20), 1), cfg)
        footers.clear()
        write(base, _rows(range(10, 50, 3), 2), cfg)  # updates across three file groups
        results[use] = (_sorted(read_table(base)), len(footers))
        assert_stats_describe_storage(base)
    assert results["true"][0] == results["false"][0]
    assert results["false"][1] > 0 and results["true"][1] == 0


def test_cli_shows_a_files_stats(conformance_next):
    import io
    import json

    from airflow_hoodie.cli import main

    base = str(conformance_next / "tables" / "cow/v9_timebasedkeygen_nonhivestyle")
    name = "2024/01/15/11/73a81ee8-5d9c-420e-bab2-4626f8756100-0_1-27-59_20260403183837738.parquet"
    out = io.StringIO()
    assert main(["stats", base, name, "--json"], out) == 0
    rows = {r["column"]: r for r in json.loads(out.getvalue())}
    assert rows["currency"]["min"] == "USD" and rows["currency"]["value_type"] == "STRING"
    assert rows["_hoodie_commit_time"]["max"] == "20260403183837738"
    assert rows["amount"]["value_type"] == "DECIMAL" and rows["amount"]["min"] == "89.99" and len(rows) == 16
    assert rows["txn_date"]["min"] == "2024-01-15"
    err = io.StringIO()
    assert main(["stats", base, "2024/01/15/11/nope.parquet"], io.StringIO(), err) != 0
    assert "holds no statistics" in err.getvalue()
