"""A CLI filter naming no existing partition says so and exits non-zero (issue 36, item 4):
``slices --partition EU`` on a table partitioned ``eu`` printed ``(0 rows)`` and exit 0."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.cli import EXIT_OK
from tests.test_cli import run


def _table(tmp_path: Path) -> str:
    base = str(tmp_path / "t")
    rows = pa.table({"id": ["a", "b"], "region": ["eu", "us"], "ts": [1, 1]})
    write_arrow(base, rows, "upsert", {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                                        "hoodie.datasource.write.partitionpath.field": "region",
                                        "hoodie.datasource.write.precombine.field": "ts"})
    return base


def test_slices_of_a_partition_that_does_not_exist(tmp_path: Path) -> None:
    base = _table(tmp_path)
    code, out, err = run("slices", base, "--partition", "EU")
    assert code != EXIT_OK and "No partition 'EU'" in err and "did you mean 'eu'" in err
    code, out, _ = run("slices", base, "--partition", "eu")
    assert code == EXIT_OK and "eu" in out


def test_read_filter_on_a_partition_value_that_does_not_exist(tmp_path: Path) -> None:
    base = _table(tmp_path)
    code, _, err = run("read", base, "--filter", "region=EU")
    assert code != EXIT_OK and "did you mean 'eu'" in err
    code, out, _ = run("read", base, "--filter", "region=eu", "--columns", "id")
    assert code == EXIT_OK and "(1 rows)" in out
    code, out, _ = run("read", base, "--filter", "id=zz")  # not a partition column: no rows is an answer
    assert code == EXIT_OK


def test_read_filter_checks_the_named_field_only(tmp_path: Path) -> None:
    """With two partition fields, a value of the other field does not make the filter's
    value exist: ``region=de`` printed nothing and exited 0 because a country was ``de``."""
    base = str(tmp_path / "t")
    rows = pa.table({"id": ["a", "b"], "region": ["eu", "us"], "country": ["de", "us"], "ts": [1, 1]})
    write_arrow(base, rows, "upsert", {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                                        "hoodie.datasource.write.partitionpath.field": "region,country",
                                        "hoodie.datasource.write.precombine.field": "ts"})
    code, _, err = run("read", base, "--filter", "region=de")
    assert code != EXIT_OK and "No partition of" in err and "Values of region: eu, us." in err
    code, out, _ = run("read", base, "--filter", "country=de", "--columns", "id")
    assert code == EXIT_OK and "(1 rows)" in out


def test_read_filter_on_a_key_generator_that_formats_paths_is_not_checked(tmp_path: Path) -> None:
    """A custom (or timestamp) key generator's paths are not column values: an empty answer
    is an answer, not 'Values of region: none'."""
    base = str(tmp_path / "t")
    rows = pa.table({"id": ["a", "b"], "region": ["eu", "us"], "ts": [1, 1]})
    write_arrow(base, rows, "upsert", {
        "hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region:simple",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
        "hoodie.datasource.write.precombine.field": "ts"})
    code, _, err = run("read", base, "--filter", "region=xx")
    assert code == EXIT_OK and "Values of region: none" not in err
