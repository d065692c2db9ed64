"""A damaged SCHEMA header in a log data block: a HoodieCorruptedDataError naming the file
and block, never a raw KeyError from the merge nor records silently decoded as empty."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table import read_table

TABLE = "mor/v6_trips_8i1u"

#: same-length edits of the header, so the block framing stays valid
CORRUPTIONS = {
    "record key renamed": (b'"_hoodie_record_key"', b'"_hoodie_record_kez"', "no _hoodie_record_key column"),
    "commit time renamed": (b'"_hoodie_commit_time"', b'"_hoodie_commit_tima"', "no _hoodie_commit_time column"),
    "fields key damaged": (b'"fields"', b'"fieldz"', "corrupt SCHEMA header: not an Avro record schema"),
    "unknown type": (b'"type":["null","string"]', b'"type":["null","strinq"]', "unusable SCHEMA header"),
}


def _corrupt(conformance: Path, tmp_path: Path, old: bytes, new: bytes) -> tuple[Path, Path]:
    base = tmp_path / "t"
    shutil.copytree(conformance / "tables" / TABLE, base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (log,) = base.rglob(".*.log.*")
    data = log.read_bytes()
    assert old in data
    log.write_bytes(data.replace(old, new, 1))
    return base, log


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_schema_header_is_named(conformance, tmp_path, case):
    old, new, words = CORRUPTIONS[case]
    base, log = _corrupt(conformance, tmp_path, old, new)
    with pytest.raises(HoodieCorruptedDataError, match=words) as info:
        read_table(str(base))
    assert log.name in str(info.value) and "byte 0" in str(info.value)
    # the read-optimized view does not touch log files and still reads
    assert read_table(str(base), query_type="read_optimized").num_rows > 0
