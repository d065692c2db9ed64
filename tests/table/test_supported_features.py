"""Table features we do not handle: a HoodieNotSupportedError naming the feature from every
entry point (reads, the CLI, writes, table services), and the table left as it was."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.cli import main
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table import read_table
from tests.table.test_table_versions import ENTRY_POINTS, _snapshot
from tests.table.table_files import copy_conformance_table as copy_table

TABLE = "mor/v6_nonpartitioned"

#: feature -> (hoodie.properties edits, words the error must name)
FEATURES = {
    "unknown table version": ({"hoodie.table.version": "7"}, "Hudi table version 7"),
    "table version 4": ({"hoodie.table.version": "4"}, "Hudi table version 4"),
    "ORC base files": ({"hoodie.table.base.file.format": "ORC"}, "base file format ORC"),
    "HFile base files": ({"hoodie.table.base.file.format": "HFILE"}, "base file format HFILE"),
    "Lance base files": ({"hoodie.table.base.file.format": "LANCE"}, "base file format LANCE"),
    "custom merge mode": ({"hoodie.record.merge.mode": "CUSTOM"}, "record merge mode CUSTOM"),
    "custom merge strategy": ({"hoodie.record.merge.strategy.id": "1897ef5f-18bc-4557-939c-9d6a8afd1519"},
                              "custom record merge strategy 1897ef5f"),
    "custom payload": ({"hoodie.compaction.payload.class": "com.example.MyPayload"}, "payload class com.example.MyPayload"),
    "partial-update payload": ({"hoodie.compaction.payload.class":
                                "org.apache.hudi.common.model.PartialUpdateAvroPayload"}, "PartialUpdateAvroPayload"),
    "bootstrap table": ({"hoodie.bootstrap.base.path": "/data/source"}, "bootstrap table"),
    "non-native table format": ({"hoodie.table.format": "iceberg"}, "table format iceberg"),
    "multiple base file formats": ({"hoodie.table.multiple.base.file.formats.enable": "true"},
                                   "multiple base file formats true"),
}


def _copy(conformance: Path, tmp_path: Path, name: str = TABLE) -> Path:
    return copy_table(conformance, name, tmp_path)


def _edit_properties(base: Path, edits: dict[str, str]) -> None:
    path = base / ".hoodie" / "hoodie.properties"
    lines = [ln for ln in path.read_text().splitlines() if ln.split("=", 1)[0] not in edits]
    path.write_text("\n".join(lines + [f"{k}={v}" for k, v in edits.items()]) + "\n")


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    return main(list(argv), out=io.StringIO(), err=err), err.getvalue()


READS = {
    "read_table": lambda b: read_table(str(b)),
    "read_table read_optimized": lambda b: read_table(str(b), query_type="read_optimized"),
}
CLI = ("read", "slices")


@pytest.mark.parametrize("entry", sorted(READS) + sorted(ENTRY_POINTS))
@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_unsupported_feature_is_refused_untouched(conformance, tmp_path, feature, entry):
    base = _copy(conformance, tmp_path)
    edits, named = FEATURES[feature]
    _edit_properties(base, edits)
    before = _snapshot(base)
    call = READS.get(entry) or ENTRY_POINTS[entry]
    with pytest.raises(HoodieNotSupportedError, match=named) as info:
        call(base)
    assert "not supported" in str(info.value)
    assert _snapshot(base) == before


@pytest.mark.parametrize("command", CLI)
@pytest.mark.parametrize("feature", ["ORC base files", "custom payload", "bootstrap table"])
def test_cli_names_the_unsupported_feature(conformance, tmp_path, feature, command):
    base = _copy(conformance, tmp_path)
    edits, named = FEATURES[feature]
    _edit_properties(base, edits)
    code, err = _cli(command, str(base))
    assert code != 0 and named in err


def test_bootstrap_commit_on_the_timeline_is_refused(conformance, tmp_path):
    """A metadata-only bootstrap leaves its reserved instant on the timeline even when the
    properties were edited: the reader still refuses the table."""
    base = _copy(conformance, tmp_path)
    (base / ".hoodie" / "00000000000001.commit").write_bytes(b"{}")
    with pytest.raises(HoodieNotSupportedError, match="bootstrap table"):
        read_table(str(base))


@pytest.mark.parametrize("key", ["hoodie.datasource.write.payload.class", "hoodie.datasource.write.record.merger.impls"])
def test_custom_payload_or_merger_in_the_write_options_is_refused(tmp_path, key):
    base = tmp_path / "new"
    with pytest.raises(HoodieNotSupportedError, match="com.example.Custom"):
        write_arrow(str(base), pa.table({"id": [1], "ts": [1]}), "upsert",
                    {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id", key: "com.example.Custom"})
    assert not base.exists()


def test_unknown_log_block_type_is_refused_with_the_file(conformance, tmp_path):
    """A block type a newer Hudi might write: named with its file, never skipped as empty."""
    base = _copy(conformance, tmp_path, "mor/v6_trips_8i1u")
    log = sorted(p for p in base.rglob(".*.log.*"))[0]
    data = bytearray(log.read_bytes())
    data[6 + 8 + 4: 6 + 8 + 8] = struct.pack(">i", 7)  # block type of the first block (after magic, size, version)
    log.write_bytes(bytes(data))
    with pytest.raises(HoodieNotSupportedError, match=f"{log.name}.*block type 7"):
        read_table(str(base))
    code, err = _cli("read", str(base))
    assert code != 0 and "block type 7" in err


def test_version_5_reads_like_version_6_and_is_not_written(conformance, tmp_path):
    """Hudi 0.12/0.13 tables (version 5) differ from 6 in nothing a reader sees; our writers
    still write version 6 only."""
    base = _copy(conformance, tmp_path)
    expected = read_table(str(base)).sort_by("_hoodie_record_key")
    _edit_properties(base, {"hoodie.table.version": "5"})
    assert read_table(str(base)).sort_by("_hoodie_record_key").equals(expected)
    before = _snapshot(base)
    with pytest.raises(HoodieNotSupportedError, match="table version 5"):
        ENTRY_POINTS["upsert"](base)
    assert _snapshot(base) == before
