"""Point lookups through a secondary index: ``read_table(filters=[(col, "=", v)])`` (and
``"in"``) on an indexed column opens only the file groups holding those rows, and returns
exactly the rows of the full read; an index a reader may not trust (still inflight, behind
the data table) or a read it does not describe (time travel) prunes nothing."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_hoodie.actions.indexer import run_indexer
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table import read as read_module
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from airflow_hoodie.table.read import read_table

NO_SKEW = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}
CITIES = ["sf", "a$b", "c\\d", "nyc", "la", "sea", "bos", "chi"]


def _rows(ids: range, ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i:03d}" for i in ids], "p": [f"p{i % 2}" for i in ids], "ts": [ts] * len(ids),
                     "city": [CITIES[(i // 10) % len(CITIES)] for i in ids],
                     "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i // 20) for i in ids], pa.date32())})


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def indexed(request, tmp_path_factory) -> str:
    """A v9 table of several file groups per partition with indexes on ``city`` and ``day``."""
    base = str(tmp_path_factory.mktemp("si") / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": request.param,
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.parquet.small.file.limit": "0",
           "hoodie.write.table.version": "9", **NO_SKEW}
    for start in range(0, 80, 20):  # each batch its own file groups
        write_arrow(base, _rows(range(start, start + 20), 1), "upsert", cfg)
    upd = _rows(range(5, 9), 2).set_column(3, "city", pa.array(["moved"] * 4))  # logs on MOR
    write_arrow(base, upd, "upsert", cfg)
    conf = HoodieConfig(NO_SKEW)
    run_indexer(HoodieTable.load(base), conf, "scheduleAndExecute", "RECORD_INDEX,SECONDARY_INDEX", "city_idx", "city")
    run_indexer(HoodieTable.load(base), conf, "scheduleAndExecute", "SECONDARY_INDEX", "day_idx", "day")
    return base


def _count_slices(monkeypatch) -> list[int]:
    opened: list[int] = []
    real = read_module.read_file_slice

    def counting(storage, file_slice, opts=None):
        opened.append(1)
        return real(storage, file_slice, opts)

    monkeypatch.setattr(read_module, "read_file_slice", counting)
    return opened


def _ids(t: pa.Table) -> list[str]:
    return sorted(t.column("id").to_pylist())


@pytest.mark.parametrize("flt", [
    [("city", "=", "a$b")],
    [("city", "=", "c\\d")],
    [("city", "in", ["sf", "moved"])],
    [("city", "==", "nowhere")],
    [("day", "=", dt.date(2024, 1, 2))],
    [("day", "=", "2024-01-03")],
    [("city", "=", "sf"), ("day", "=", dt.date(2024, 1, 1))],
    [("city", "=", "la"), ("p", "=", "p1")],
])
def test_a_point_lookup_opens_fewer_file_groups_and_returns_the_full_reads_rows(indexed, flt, monkeypatch):
    opened = _count_slices(monkeypatch)
    full = read_table(indexed, filters=flt, metadata_enable=False)
    all_slices = len(opened)
    opened.clear()
    pruned = read_table(indexed, filters=flt)
    assert _ids(pruned) == _ids(full)
    assert pruned.sort_by("id").drop_columns(["_hoodie_file_name"]).equals(
        full.sort_by("id").drop_columns(["_hoodie_file_name"]))
    assert len(opened) < all_slices, (len(opened), all_slices)


def test_filters_the_index_cannot_serve_prune_nothing(indexed, monkeypatch):
    opened = _count_slices(monkeypatch)
    for flt in ([("city", "!=", "sf")], [("city", ">", "m")], [("city", "=", None)], [("ts", "=", 1)]):
        opened.clear()
        full = read_table(indexed, filters=flt, metadata_enable=False)
        everything = len(opened)
        opened.clear()
        assert _ids(read_table(indexed, filters=flt)) == _ids(full)
        assert len(opened) == everything


def test_an_index_still_inflight_is_not_used(indexed, monkeypatch, tmp_path):
    import shutil

    base = str(tmp_path / "copy")
    shutil.copytree(indexed, base)
    table = HoodieTable.load(base)
    listed = [p for p in listed_in(table.config) if p != "secondary_index_city_idx"]
    table.update_config({METADATA_PARTITIONS: ",".join(listed), METADATA_PARTITIONS_INFLIGHT: "secondary_index_city_idx"})
    opened = _count_slices(monkeypatch)
    read_table(base, filters=[("city", "=", "sf")], metadata_enable=False)
    everything = len(opened)
    opened.clear()
    read_table(base, filters=[("city", "=", "sf")])
    assert len(opened) == everything


def test_time_travel_reads_every_slice(indexed, monkeypatch):
    table = HoodieTable.load(indexed)
    as_of = table.timeline.completed_commits().last().timestamp
    opened = _count_slices(monkeypatch)
    read_table(indexed, filters=[("city", "=", "sf")], metadata_enable=False)
    everything = len(opened)
    opened.clear()
    travelled = read_table(indexed, filters=[("city", "=", "sf")], as_of=as_of)
    assert len(opened) == everything
    assert _ids(travelled) == _ids(read_table(indexed, filters=[("city", "=", "sf")]))


@pytest.mark.parametrize("name", ["cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"])
def test_hudis_own_secondary_indexes_prune_reads(conformance_next, name, monkeypatch):
    base = str(conformance_next / "tables" / name)
    full_all = read_table(base, metadata_enable=False)
    merchant = next(m for m in full_all.column("merchant_name").to_pylist() if m)
    for flt in ([("merchant_name", "=", merchant)], [("merchant_name", "in", [merchant, "none such"])]):
        opened = _count_slices(monkeypatch)
        full = read_table(base, filters=flt, metadata_enable=False)
        everything = len(opened)
        opened.clear()
        pruned = read_table(base, filters=flt)
        assert _ids_of(pruned) == _ids_of(full) and full.num_rows > 0
        assert len(opened) < everything


def _ids_of(t: pa.Table) -> list[str]:
    return sorted(t.column("txn_id").to_pylist())


def test_an_index_behind_the_data_table_is_not_used(indexed, tmp_path):
    import os
    import shutil

    from airflow_hoodie.table.metadata_table.secondary_index_pruning import (
        metadata_table_current,
        usable_secondary_indexes,
    )

    base = str(tmp_path / "copy")
    shutil.copytree(indexed, base)
    table = HoodieTable.load(base)
    assert metadata_table_current(table) and set(usable_secondary_indexes(table)) == {"city", "day"}
    # the metadata table's delta commit of the latest data instant never completed
    last = table.timeline.completed_commits().last().timestamp
    folder = os.path.join(base, ".hoodie", "metadata", ".hoodie", "timeline")
    (done,) = [n for n in os.listdir(folder) if n.startswith(f"{last}_") and n.endswith(".deltacommit")]
    os.remove(os.path.join(folder, done))
    table = HoodieTable.load(base)
    assert not metadata_table_current(table) and usable_secondary_indexes(table) == {}


def test_a_prefix_is_read_through_the_hfile_key_index_across_block_boundaries():
    from airflow_hoodie.table.metadata_table.hfile_lookup import (
        _root_index,
        get_prefixed_records,
    )
    from airflow_hoodie.table.metadata_table.hfile_reader import HFile
    from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
    from airflow_hoodie.table.metadata_table.metadata_record import (
        metadata_record_schema_json,
    )

    keys = sorted({f"{v}${k:04d}".encode() for v in ("a", "a\\$b", "b", "bb", "c") for k in range(150)})
    data = write_hfile([(k, b"x" * 40) for k in keys], metadata_record_schema_json(9), block_size=512)
    hfile = HFile(data, "mem")
    assert len(_root_index(hfile)) > 20  # the entries of one value span several blocks
    for prefixes in ([b"a$"], [b"b$"], [b"a\\$b$", b"c$"], [b"bb$"], [b"zz$"], [b"$"]):
        expected = [(k, b"x" * 40) for k in keys if any(k.startswith(p) for p in prefixes)]
        assert list(get_prefixed_records(hfile, prefixes)) == expected, prefixes

