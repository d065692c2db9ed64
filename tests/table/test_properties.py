"""hoodie.properties: Java properties rules, Hudi's checksum, validation errors."""

from __future__ import annotations

import glob

import pytest

from airflow_hoodie.errors import HoodieConfigError, HoodieCorruptedDataError, HoodieError, HoodieTableNotFoundError
from airflow_hoodie.table.properties import (
    CHECKSUM,
    TableConfig,
    compute_checksum,
    dump_java_properties,
    load_java_properties,
)
from airflow_hoodie.table.storage.storage import Storage


def _all_props(conformance):
    paths = sorted(glob.glob(str(conformance / "tables/*/*/.hoodie/hoodie.properties")))
    assert len(paths) == 11
    return paths


def test_checksum_matches_every_conformance_table(conformance):
    for path in _all_props(conformance):
        text = open(path, encoding="latin-1").read()
        props = load_java_properties(text)
        assert compute_checksum(props) == int(props[CHECKSUM]), path


def test_load_conformance_typed(conformance):
    storage, base = Storage.for_uri(str(conformance / "tables/cow/v6_complexkeygen_hivestyle"))
    cfg = TableConfig.load(storage, base)
    assert cfg.table_name == "v6_complexkeygen_hivestyle"
    assert cfg.table_type == "COPY_ON_WRITE" and not cfg.is_mor
    assert cfg.record_key_fields == ["id", "name"]
    assert cfg.partition_fields == ["byteField", "shortField"]
    assert cfg.precombine_field == "longField"
    assert cfg.key_generator_class == "org.apache.hudi.keygen.ComplexKeyGenerator"
    assert cfg.hive_style_partitioning and not cfg.url_encode_partitioning
    assert cfg.base_file_format == "PARQUET" and cfg.base_file_extension == ".parquet"
    assert cfg.table_version == 6 and cfg.timeline_layout_version == 1
    assert cfg.populate_meta_fields and cfg.archivelog_folder == "archived"
    assert cfg.create_schema.startswith('{"type":"record","name":"v6_complexkeygen_hivestyle_record"')
    mor = TableConfig.load(*Storage.for_uri(str(conformance / "tables/mor/v6_trips_8i1u")))
    assert mor.is_mor and mor.payload_class.endswith("OverwriteWithLatestAvroPayload")


def test_round_trip_every_conformance_file(conformance, tmp_path):
    for i, path in enumerate(_all_props(conformance)):
        orig = load_java_properties(open(path, encoding="latin-1").read())
        storage, base = Storage.for_uri(str(tmp_path / f"t{i}"))
        TableConfig(orig).save(storage, base, create=True)
        raw = (tmp_path / f"t{i}/.hoodie/hoodie.properties").read_text("latin-1")
        assert raw.startswith("#Updated at ")  # the carried-over checksum is valid
        assert '\\:' in raw
        lines = [ln for ln in raw.splitlines() if not ln.startswith("#")]
        assert lines[-1].startswith("hoodie.table.checksum=")
        keys = [ln.split("=", 1)[0] for ln in lines[:-1]]
        assert keys == sorted(keys)
        assert TableConfig.load(storage, base).as_dict() == orig


def test_java_escaping_round_trip():
    props = {"a key": " lead space", "k:=#!": "v=1:2#3!\\end", "uni": "h\u00e9llo \u4e16 \U0001F600",
             "tabs": "a\tb\nc\rd\fe", "empty": ""}
    text = dump_java_properties(props, "comment")
    assert text.startswith("#comment\n#")
    assert "\\u00E9" in text and "\\uD83D\\uDE00" in text
    assert load_java_properties(text) == props


def test_java_parsing_rules():
    text = "# c\n! c2\n  a = 1\nb:2\nc 3\nd=multi \\\n    line\ne\n f=x\\:y\n"
    assert load_java_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "multi line", "e": "", "f": "x:y"}


def test_update_header_and_checksum_recomputed(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    cfg = TableConfig({"hoodie.table.name": "t1", "hoodie.table.type": "MERGE_ON_READ"})
    saved = cfg.save(storage, base, create=True)
    assert saved.checksum == compute_checksum({"hoodie.table.name": "t1"})
    from airflow_hoodie.errors import HoodieTableExistsError

    with pytest.raises(HoodieTableExistsError):
        cfg.save(storage, base, create=True)
    raw = (tmp_path / "t/.hoodie/hoodie.properties").read_text()
    assert raw.startswith("#Properties saved on ")
    saved.with_values({"hoodie.table.precombine.field": "ts"}).save(storage, base)
    assert (tmp_path / "t/.hoodie/hoodie.properties").read_text().startswith("#Updated at ")
    # a new database name invalidates the old checksum: recomputed, Hudi's first-save header
    saved.with_values({"hoodie.database.name": "db"}).save(storage, base)
    assert (tmp_path / "t/.hoodie/hoodie.properties").read_text().startswith("#Properties saved on ")
    loaded = TableConfig.load(storage, base)
    assert loaded.checksum == compute_checksum({"hoodie.table.name": "t1", "hoodie.database.name": "db"})
    assert loaded.is_mor


@pytest.mark.parametrize(
    "text,err,match",
    [
        ("hoodie.table.type=COPY_ON_WRITE\n", HoodieConfigError, "no hoodie.table.name"),
        ("hoodie.table.name=x\nhoodie.table.type=BOGUS\n", HoodieConfigError, "COPY_ON_WRITE or MERGE_ON_READ"),
        ("hoodie.table.name=x\nhoodie.table.version=six\n", HoodieConfigError, "not a number"),
        ("hoodie.table.name=x\nhoodie.table.checksum=1\n", HoodieCorruptedDataError, "does not match"),
        ("hoodie.table.name=x\\u12\n", HoodieCorruptedDataError, "Malformed"),
    ],
)
def test_malformed_properties(tmp_path, text, err, match):
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie/hoodie.properties").write_text(text)
    storage, base = Storage.for_uri(str(tmp_path))
    with pytest.raises(err, match=match) as info:
        TableConfig.load(storage, base)
    assert isinstance(info.value, HoodieError)


def test_missing_table(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path))
    with pytest.raises(HoodieTableNotFoundError, match="no Hudi table at .*create one by running an upsert"):
        TableConfig.load(storage, base)


def test_backup_used_when_main_missing(tmp_path):
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie/hoodie.properties.backup").write_text("hoodie.table.name=bk\n")
    assert TableConfig.load(*Storage.for_uri(str(tmp_path))).table_name == "bk"


def test_hudi_1_1_ordering_fields_key_is_the_precombine_field(conformance_next):
    """Table version 9 renamed hoodie.table.precombine.field to hoodie.table.ordering.fields."""
    from airflow_hoodie.table.hoodie_table import HoodieTable

    table = HoodieTable.load(str(conformance_next / "tables" / "mor" / "v9_txns_simple_meta"))
    assert "hoodie.table.precombine.field" not in table.config
    assert table.config.precombine_field == "txn_ts"
