"""Secondary indexes as Hudi 1.x writes them: the key encoding, the file-group mapping of
index versions V1 and V2, and every entry of the real tables' indexes decoded, each in the
file group Hudi's mapping gives it, the live ones exactly the rows hudi-rs reads."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table import secondary_index
from airflow_hoodie.table.metadata_table.record_index import file_group_index
from airflow_hoodie.table.metadata_table.secondary_index import (
    SecondaryIndexDefinition,
    entry_file_group,
    escape,
    file_group_id,
    hashed_part,
    index_values,
    live_keys,
    record_keys_for,
    secondary_index_definitions,
    secondary_index_entries,
    secondary_index_key,
    split_key,
    unescape,
)


def test_escaping_marks_backslash_dollar_and_nul_and_a_null_is_a_lone_nul():
    assert escape("plain") == "plain"
    assert escape("a$b\\c\0d") == "a\\$b\\\\c\\\0d"
    assert escape(None) == "\0" and unescape("\0") is None
    for value in ("a$b", "\\", "$$", "x\\$y", "", "\0", "Café €"):
        assert unescape(escape(value)) == value


def test_a_key_splits_at_its_first_unescaped_dollar():
    key = secondary_index_key("price $5 \\ net", "id$1\\")
    assert key == "price \\$5 \\\\ net$id\\$1\\\\"
    assert split_key(key) == ("price $5 \\ net", "id$1\\")
    assert split_key(secondary_index_key(None, "k")) == (None, "k")
    with pytest.raises(HoodieCorruptedDataError, match="no unescaped"):
        split_key("only\\$escaped")


def test_file_group_mapping_matches_hudis_own_test_vectors():
    # TestHoodieTableMetadataUtil.mapRecordKeyToFileGroupIndexTestCases (Hudi 1.1)
    assert entry_file_group("secondary_key$primary_key", 10, "V2") == 8
    assert entry_file_group("secondary_key$primary_key", 10, "V1") == 0
    assert entry_file_group("test_key$record_key", 1, "V2") == 0
    # V2 hashes the escaped value with its trailing $: every entry of a value in one group
    assert hashed_part(secondary_index_key("a$b", "k1"), "V2") == "a\\$b$"
    assert len({entry_file_group(secondary_index_key("v", f"k{i}"), 10, "V2") for i in range(50)}) == 1
    with pytest.raises(HoodieCorruptedDataError):
        entry_file_group("primary_key_secondary_key", 10, "V2")
    with pytest.raises(HoodieNotSupportedError, match="V3"):
        entry_file_group("a$b", 10, "V3")
    assert file_group_id("secondary_index_txn_date_idx", 3) == "secondary-index-txn-date-idx-0003-0"


def test_index_values_are_the_text_hudis_writer_stores():
    assert index_values(pa.array([dt.date(2024, 1, 15), None, dt.date(1969, 12, 31)])) == ["19737", None, "-1"]
    assert index_values(pa.array([dt.date(2024, 1, 15)], pa.date64())) == ["19737"]
    assert index_values(pa.chunked_array([["a$", None], ["b"]])) == ["a$", None, "b"]
    assert index_values(pa.array([-3, None], pa.int64())) == ["-3", None]
    assert index_values(pa.array([True, False, None])) == ["true", "false", None]
    assert index_values(pa.array(["x", None, "x"]).dictionary_encode()) == ["x", None, "x"]
    with pytest.raises(HoodieNotSupportedError, match="double"):
        index_values(pa.array([1.5]))


def test_definitions_take_the_release_lines_version_when_index_json_names_none():
    plain = {"indexType": "secondary_index", "indexFunction": "identity", "sourceFields": ["c"]}
    assert SecondaryIndexDefinition.parse("secondary_index_c", plain, "V2").version == "V2"
    assert SecondaryIndexDefinition.parse("secondary_index_c", {**plain, "version": "V1"}, "V2").version == "V1"
    with pytest.raises(HoodieNotSupportedError, match="secondary_index_c"):
        SecondaryIndexDefinition.parse("secondary_index_c", {**plain, "sourceFields": ["a", "b"]}, "V2")
    with pytest.raises(HoodieNotSupportedError, match="V3"):
        SecondaryIndexDefinition.parse("secondary_index_c", {**plain, "version": "V3"}, "V2")


# ------------------------------------------------------------------------ the real tables
def _tables_with_secondary_indexes(root: Path) -> list[Path]:
    out = []
    for defs in sorted((root / "tables").glob("*/*/.hoodie/.index_defs/index.json")):
        entries = json.loads(defs.read_text()).get("indexDefinitions") or {}
        if any(d.get("indexType") == "secondary_index" for d in entries.values()):
            out.append(defs.parents[2])
    return out


def _file_group_count(base: Path, partition: str) -> int:
    """How many file groups the partition's folder holds (base files and logs alike)."""
    names = (p.name.lstrip(".") for p in (base / ".hoodie" / "metadata" / partition).iterdir())
    return len({n.split("_", 1)[0] for n in names if n.startswith(partition.replace("_", "-"))})


def _hudi_rs_table(base: Path) -> pa.Table:
    from hudi import HudiReadOptions, HudiTableBuilder

    batches = list(HudiTableBuilder.from_base_uri(str(base)).build().read(HudiReadOptions()))
    return pa.Table.from_batches(batches)


def test_the_corpus_has_the_secondary_indexes_this_test_reads(conformance_next):
    names = {p.relative_to(conformance_next / "tables").as_posix() for p in _tables_with_secondary_indexes(conformance_next)}
    assert {"cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"} <= names


@pytest.mark.parametrize("name", ["cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"])
def test_every_entry_is_in_its_file_group_and_the_live_ones_are_the_rows_hudi_rs_reads(conformance_next, name):
    base = conformance_next / "tables" / name
    table = HoodieTable.load(str(base))
    definitions = secondary_index_definitions(table)
    assert [(d.name, d.source_field, d.version) for d in definitions] == [
        ("secondary_index_merchant_idx", "merchant_name", "V2"), ("secondary_index_txn_date_idx", "txn_date", "V2")]
    rows = _hudi_rs_table(base)
    record_keys = rows["_hoodie_record_key"].to_pylist()
    for definition in definitions:
        entries = list(secondary_index_entries(table, definition))
        count = _file_group_count(base, definition.name)
        assert entries and count == 10 and {e.file_group for e in entries} <= set(range(count))
        misplaced = [(e.key, e.file_group, e.where) for e in entries
                     if entry_file_group(e.key, count, definition.version) != e.file_group]
        assert misplaced == []
        # V1's whole-key hash, or the value without its trailing $ (an early 1.x reading of
        # Hudi's code), would put most of them elsewhere: the check above has teeth
        assert any(entry_file_group(e.key, count, "V1") != e.file_group for e in entries)
        assert any(file_group_index(hashed_part(e.key, "V2")[:-1], count) != e.file_group for e in entries)
        expected = {secondary_index_key(v, k) for v, k in zip(index_values(rows[definition.source_field]), record_keys)}
        assert live_keys(entries) == expected
    # a null value is indexed too, as a lone NUL
    assert any(k.startswith("\0$") for k in live_keys(secondary_index_entries(table, definitions[0])))


def test_every_corpus_table_with_a_secondary_index_decodes_into_hudis_file_groups(conformance_next):
    for base in _tables_with_secondary_indexes(conformance_next):
        table = HoodieTable.load(str(base))
        for definition in secondary_index_definitions(table):
            entries = list(secondary_index_entries(table, definition))
            count = _file_group_count(base, definition.name)
            assert all(entry_file_group(e.key, count, definition.version) == e.file_group for e in entries), base


@pytest.mark.parametrize("name", ["cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"])
def test_record_keys_of_values_are_the_rows_holding_them(conformance_next, name, monkeypatch):
    base = conformance_next / "tables" / name
    table = HoodieTable.load(str(base))
    rows = _hudi_rs_table(base)
    record_keys = rows["_hoodie_record_key"].to_pylist()
    for definition in secondary_index_definitions(table):
        values = index_values(rows[definition.source_field])
        expected: dict[str | None, set[str]] = {}
        for value, key in zip(values, record_keys):
            expected.setdefault(value, set()).add(key)
        assert record_keys_for(table, definition, set(values) | {"no such value"}) == {
            **expected, "no such value": set()}
    # V2: one value's entries share a file group, so a lookup of one value reads one group
    read: list[int] = []
    real = secondary_index.group_entries
    monkeypatch.setattr(secondary_index, "group_entries",
                        lambda t, f, d, i, *rest: read.append(i) or real(t, f, d, i, *rest))
    merchant = secondary_index_definitions(table)[0]
    assert record_keys_for(table, merchant, ["Amazon"]) == {"Amazon": {"TXN-001"}}
    assert read == [entry_file_group(secondary_index_key("Amazon", "TXN-001"), 10, "V2")]


@pytest.mark.parametrize("name", ["cow/v9_txns_simple_meta", "mor/v9_txns_simple_meta"])
def test_our_records_are_byte_for_byte_the_ones_hudi_wrote(conformance_next, name):
    """secondary_index_records encodes an entry as Hudi 1.1 did in its base HFiles."""
    from airflow_hoodie.table.metadata_table.hfile_reader import HFile

    hfiles = sorted((conformance_next / "tables" / name / ".hoodie" / "metadata").glob("secondary_index_*/*.hfile"))
    pairs = [(k, v) for f in hfiles for k, v in HFile(f.read_bytes(), str(f)).records()]
    assert len(pairs) > 10
    ours = secondary_index.secondary_index_records({k.decode("utf-8"): False for k, _ in pairs}, 9)
    assert sorted(ours) == sorted(pairs)
