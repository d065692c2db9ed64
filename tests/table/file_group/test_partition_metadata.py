"""Partition marker files as Hudi 0.14 writes them."""

from __future__ import annotations

import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.file_group.partition_metadata import (
    is_partition,
    read_partition_metadata,
    write_partition_metadata,
)
from airflow_hoodie.table.storage.storage import Storage


def test_read_conformance(conformance):
    storage, base = Storage.for_uri(str(conformance / "tables/cow/v6_complexkeygen_hivestyle"))
    md = read_partition_metadata(storage, base, "byteField=10/shortField=300")
    assert md == {"commitTime": "20240418173213674", "partitionDepth": "2"}
    storage, base = Storage.for_uri(str(conformance / "tables/cow/v6_nonpartitioned"))
    assert read_partition_metadata(storage, base, "")["partitionDepth"] == "0"
    assert is_partition(storage, base, "")


def test_write_round_trip(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path))
    assert not is_partition(storage, base, "2023/04/01")
    assert write_partition_metadata(storage, base, "2023/04/01", "20250101000000000")
    assert not write_partition_metadata(storage, base, "2023/04/01", "20250101000000001")
    assert is_partition(storage, base, "2023/04/01")
    text = (tmp_path / "2023/04/01/.hoodie_partition_metadata").read_text()
    assert text.startswith("#partition metadata\n#")
    assert text.endswith("commitTime=20250101000000000\npartitionDepth=3\n")
    assert read_partition_metadata(storage, base, "2023/04/01")["commitTime"] == "20250101000000000"
    write_partition_metadata(storage, base, "", "20250101000000000")
    assert read_partition_metadata(storage, base, "")["partitionDepth"] == "0"


def test_corrupt_marker(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p/.hoodie_partition_metadata").write_text("garbage\n")
    storage, base = Storage.for_uri(str(tmp_path))
    with pytest.raises(HoodieCorruptedDataError, match="no commitTime"):
        read_partition_metadata(storage, base, "p")
    with pytest.raises(HoodieCorruptedDataError, match="not a Hudi partition"):
        read_partition_metadata(storage, base, "q")
