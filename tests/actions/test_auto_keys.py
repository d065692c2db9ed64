"""Tables without a record key field (Hudi 0.14+ auto-generated keys): read, appended to by
insert and bulk_insert with keys made Hudi's way, upsert and delete refused."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieKeyError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.metadata_table.test_metadata_maintained import assert_listing_true
from tests.table.normalize import hudi_rs_rows, normalize_table

AUTO_KEY = re.compile(r"^(\d{17})_(\d+)_(\d+)$")


def _copy_autokeys_table(conformance_next: Path, tmp_path: Path) -> Path:
    base = tmp_path / "trips"
    shutil.copytree(conformance_next / "tables" / "cow" / "v6_autokeys_mdt", base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return base


def _trips(n: int, start: int = 0) -> pa.Table:
    return pa.table({"ts": [1_700_000_000 + i for i in range(start, start + n)],
                     "uuid": [f"u{i}" for i in range(start, start + n)],
                     "rider": ["r"] * n, "driver": ["d"] * n, "fare": [float(i) for i in range(n)],
                     "city": ["chennai" if i % 2 else "san_francisco" for i in range(start, start + n)]})


@pytest.mark.parametrize("operation", ["insert", "bulk_insert"])
def test_appending_to_a_real_hudi_auto_key_table(conformance_next, tmp_path, operation):
    base = _copy_autokeys_table(conformance_next, tmp_path)
    before = read_table(str(base))
    result = write_arrow(str(base), _trips(4), operation, {}, table_name="trips_table")
    after = read_table(str(base))
    assert after.num_rows == before.num_rows + 4
    new = [r for r in after.to_pylist() if r["_hoodie_commit_time"] == result.instant]
    assert len(new) == 4
    keys = [r["_hoodie_record_key"] for r in new]
    assert len(set(keys)) == 4 and all(AUTO_KEY.match(k) and k.startswith(result.instant + "_") for k in keys)
    # the table's metadata table is kept true: it lists exactly the files on storage
    assert_listing_true(base, operation)
    assert normalize_table(after) == hudi_rs_rows(str(base))


@pytest.mark.parametrize("operation", ["upsert", "delete"])
def test_upsert_and_delete_are_refused_on_an_auto_key_table(conformance_next, tmp_path, operation):
    base = _copy_autokeys_table(conformance_next, tmp_path)
    before = sorted(str(p.relative_to(base)) for p in base.rglob("*"))
    with pytest.raises(HoodieKeyError, match="insert or bulk_insert"):
        write_arrow(str(base), _trips(1), operation, {}, table_name="trips_table")
    assert sorted(str(p.relative_to(base)) for p in base.rglob("*")) == before


def test_a_new_table_without_record_key_generates_its_keys(tmp_path):
    base = tmp_path / "t"
    r1 = write_arrow(str(base), _trips(3), "insert", {"hoodie.datasource.write.partitionpath.field": "city"},
                     table_name="t")
    r2 = write_arrow(str(base), _trips(3, 3), "insert", {})
    assert "hoodie.table.recordkey.fields" not in dict(HoodieTable.load(str(base)).config.items())
    keys = read_table(str(base), columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert len(keys) == len(set(keys)) == 6
    assert {k.split("_")[0] for k in keys} == {r1.instant, r2.instant}
