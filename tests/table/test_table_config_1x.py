"""A new table at hoodie.write.table.version 8 or 9 gets the hoodie.properties Hudi 1.0/1.1 writes.

Each real version 8/9 table of the conformance corpus is "re-created": the write options its
writer must have used are derived from its hoodie.properties, and the properties we create
from them are compared with Hudi's key by key (values included). Keys the metadata table adds
later (its partitions, the index definitions path) are not part of creating a table.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from airflow_hoodie.actions.merge_settings import write_ordering_fields
from airflow_hoodie.actions.write_config import (
    table_config_from_write_config,
    with_table_settings,
)
from airflow_hoodie.actions.write_settings import WriteRequest
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.table import properties as tp
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.keygen.keygen_config import TYPE_TO_CLASS
from airflow_hoodie.table.properties import TableConfig, load_java_properties


def _created(config, name, schema):
    """hoodie.properties of a table the write with ``config`` creates (its table type checked
    as the write's request checks it)."""
    return table_config_from_write_config(config, name, schema, WriteRequest.from_config(config).table_type)


#: keys written after creation (by the metadata table), and the checksum compared separately
NOT_CREATION = {tp.METADATA_PARTITIONS, "hoodie.table.metadata.partitions.inflight", "hoodie.table.index.defs.path",
                tp.CHECKSUM}
SCHEMA = {"type": "record", "name": "t_record", "namespace": "hoodie.t",
          "fields": [{"name": "id", "type": "string"}, {"name": "ts", "type": "long"},
                     {"name": "seq", "type": "int"}, {"name": "p", "type": "string"}]}


def _hudi_1x_tables(root: pathlib.Path) -> list[pathlib.Path]:
    found = []
    for path in sorted(root.glob("tables/*/*/.hoodie/hoodie.properties")):
        props = load_java_properties(path.read_text("latin-1"))
        if int(props[tp.VERSION]) >= 8:
            found.append(path)
    return found


def _write_options_of(props: dict[str, str]) -> dict[str, str]:
    """The options a writer names to create this table (what it chose, not Hudi's defaults)."""
    tc = TableConfig(props)
    conf = {
        "hoodie.write.table.version": props[tp.VERSION],
        "hoodie.table.type": tc.table_type,
        "hoodie.datasource.write.recordkey.field": props.get(tp.RECORDKEY_FIELDS, ""),
        "hoodie.datasource.write.partitionpath.field": props.get(tp.PARTITION_FIELDS, ""),
        "hoodie.datasource.write.keygenerator.class": TYPE_TO_CLASS[props[tp.KEY_GENERATOR_TYPE]],
        "hoodie.datasource.write.hive_style_partitioning": props[tp.HIVE_STYLE_PARTITIONING],
        "hoodie.database.name": props[tp.DATABASE_NAME],
    }
    if tc.ordering_fields:
        conf["hoodie.table.ordering.fields"] = ",".join(tc.ordering_fields)
    if tp.POPULATE_META_FIELDS in props:
        conf[tp.POPULATE_META_FIELDS] = props[tp.POPULATE_META_FIELDS]
    conf.update({k: v for k, v in props.items() if k.startswith("hoodie.keygen.")})
    return conf


def test_the_corpus_holds_version_8_and_9_tables(conformance_next):
    versions = {load_java_properties(p.read_text("latin-1"))[tp.VERSION] for p in _hudi_1x_tables(conformance_next)}
    assert versions == {"8", "9"}


def test_a_new_1x_table_gets_the_properties_hudi_writes_key_by_key(conformance_next, tmp_path):
    tables = _hudi_1x_tables(conformance_next)
    assert tables
    for path in tables:
        hudi = load_java_properties(path.read_text("latin-1"))
        ours = _created(HoodieConfig(_write_options_of(hudi)), hudi[tp.NAME],
                                              json.loads(hudi[tp.CREATE_SCHEMA]))
        want = {k: v for k, v in hudi.items() if k not in NOT_CREATION}
        name = f"{path.parent.parent.parent.name}_{path.parent.parent.name}"
        assert sorted(ours) == sorted(want), name
        assert {k: v for k, v in ours.items() if v != want[k]} == {}, name
        # created on storage: the same checksum Hudi wrote, and the file reads back the same
        table = HoodieTable.create(str(tmp_path / name), ours)
        assert table.config.checksum == int(hudi[tp.CHECKSUM]), name
        reread = TableConfig.load(table.storage, table.base_path)
        assert {k: v for k, v in reread.items() if k != tp.CHECKSUM} == ours, name


@pytest.mark.parametrize("version, ordering_key, absent_key", [
    (9, tp.ORDERING_FIELDS, tp.PRECOMBINE_FIELD), (8, tp.PRECOMBINE_FIELD, tp.ORDERING_FIELDS)])
def test_several_ordering_fields_are_kept_in_order_under_the_versions_key(version, ordering_key, absent_key):
    props = _created(HoodieConfig({
        "hoodie.write.table.version": str(version), "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.table.ordering.fields": "ts,seq"}), "t", SCHEMA)
    assert props[ordering_key] == "ts,seq"
    assert absent_key not in props
    assert props[tp.RECORD_MERGE_MODE] == "EVENT_TIME_ORDERING"
    assert TableConfig(props).ordering_fields == ["ts", "seq"]


def test_without_ordering_fields_a_1x_table_orders_by_commit_time():
    base = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p"}
    v9 = _created(HoodieConfig({**base, "hoodie.write.table.version": "9"}), "t", SCHEMA)
    assert v9[tp.RECORD_MERGE_MODE] == "COMMIT_TIME_ORDERING"
    assert tp.ORDERING_FIELDS not in v9 and tp.RECORD_MERGE_STRATEGY_ID not in v9
    v8 = _created(HoodieConfig({**base, "hoodie.write.table.version": "8"}), "t", SCHEMA)
    assert (v8[tp.RECORD_MERGE_MODE], v8[tp.RECORD_MERGE_STRATEGY_ID], v8[tp.PAYLOAD_CLASS]) == (
        "COMMIT_TIME_ORDERING", "ce9acb64-bde0-424c-9b91-f6ebba25356d",
        "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload")


def test_an_explicit_commit_time_mode_is_written_even_with_ordering_fields():
    props = _created(HoodieConfig({
        "hoodie.write.table.version": "9", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.table.ordering.fields": "ts", "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}), "t", SCHEMA)
    assert props[tp.RECORD_MERGE_MODE] == "COMMIT_TIME_ORDERING"
    assert props[tp.KEY_GENERATOR_TYPE] == "NON_PARTITION"


def test_a_version_6_table_is_created_as_today():
    props = _created(HoodieConfig({
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p"}),
        "t", SCHEMA)
    assert props[tp.VERSION] == "6" and props[tp.TIMELINE_LAYOUT_VERSION] == "1"
    assert props[tp.KEY_GENERATOR_CLASS] == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert props[tp.PRECOMBINE_FIELD] == "ts"  # Hudi 0.14's default ordering field, present in the schema
    for key in (tp.INITIAL_VERSION, tp.KEY_GENERATOR_TYPE, tp.TABLE_FORMAT, tp.RECORD_MERGE_MODE, tp.TIMELINE_PATH):
        assert key not in props


@pytest.mark.parametrize("version", ["7", "10", "5", "nine"])
def test_a_table_version_we_do_not_write_is_refused_naming_those_we_do(version):
    with pytest.raises(HoodieNotSupportedError, match="6, 8, 9"):
        _created(HoodieConfig({
            "hoodie.write.table.version": version, "hoodie.datasource.write.recordkey.field": "id"}), "t", SCHEMA)


@pytest.mark.parametrize("version, conf", [
    (v, c) for v in ("6", "8", "9") for c in ({"hoodie.record.merge.mode": "CUSTOM"},
                                              {"hoodie.write.record.merge.mode": "custom"})
] + [(v, c) for v in ("8", "9") for c in ({"hoodie.datasource.write.payload.class": "com.example.MyPayload"},
                                          {"hoodie.record.merge.strategy.id": "00000000-1111-2222-3333-444444444444"})])
def test_custom_merging_is_refused_at_creation(version, conf):
    """(A version 6 write refuses a custom payload or strategy when it loads the table.)"""
    config = {"hoodie.write.table.version": version, "hoodie.datasource.write.recordkey.field": "id", **conf}
    with pytest.raises(HoodieNotSupportedError, match="CUSTOM"):
        _created(HoodieConfig(config), "t", SCHEMA)


def test_contradicting_merge_settings_are_refused():
    with pytest.raises(HoodieConfigError, match="contradicts"):
        _created(HoodieConfig({
            "hoodie.write.table.version": "9", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
            "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}),
            "t", SCHEMA)


def test_an_ordering_field_missing_from_the_schema_is_refused_for_a_1x_table():
    with pytest.raises(HoodieConfigError, match="nope"):
        _created(HoodieConfig({
            "hoodie.write.table.version": "9", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.table.ordering.fields": "ts,nope"}), "t", SCHEMA)


def test_a_payload_class_named_for_a_version_9_table_is_kept_as_legacy():
    props = _created(HoodieConfig({
        "hoodie.write.table.version": "9", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.table.ordering.fields": "ts",
        "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}),
        "t", SCHEMA)
    assert props[tp.RECORD_MERGE_MODE] == "EVENT_TIME_ORDERING"
    assert props[tp.LEGACY_PAYLOAD_CLASS] == "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    assert props[tp.RECORD_MERGE_STRATEGY_ID] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    assert tp.PAYLOAD_CLASS not in props


def test_the_write_ordering_fields_prefer_the_1x_key_and_read_lists():
    assert write_ordering_fields(HoodieConfig({"hoodie.table.ordering.fields": "a, b",
                                               "hoodie.datasource.write.precombine.field": "c"})) == ["a", "b"]
    assert write_ordering_fields(HoodieConfig({"hoodie.datasource.write.precombine.field": "c,d"})) == ["c", "d"]


def test_table_config_exposes_one_ordering_fields_list():
    assert TableConfig({tp.ORDERING_FIELDS: "a,b"}).ordering_fields == ["a", "b"]
    assert TableConfig({tp.PRECOMBINE_FIELD: "x"}).ordering_fields == ["x"]
    assert TableConfig({}).ordering_fields == []
    assert TableConfig({tp.ORDERING_FIELDS: "a,b"}).precombine_field == "a"
    assert TableConfig({tp.KEY_GENERATOR_TYPE: "TIMESTAMP"}).key_generator_class == \
        "org.apache.hudi.keygen.TimestampBasedKeyGenerator"


def test_an_existing_tables_version_merge_mode_ordering_and_keygen_settings_fill_the_write(conformance_next):
    path = conformance_next / "tables/cow/v9_timebasedkeygen_nonhivestyle/.hoodie/hoodie.properties"
    table = TableConfig(load_java_properties(path.read_text("latin-1")))
    cfg = with_table_settings(HoodieConfig({"hoodie.keygen.timebased.output.dateformat": "yyyy"}), table)
    assert cfg.get("hoodie.write.table.version") == "9"
    assert cfg.get("hoodie.record.merge.mode") == "EVENT_TIME_ORDERING"
    assert cfg.get("hoodie.keygen.timebased.timestamp.type") == "DATE_STRING"
    assert cfg.get("hoodie.keygen.timebased.input.dateformat") == "yyyy-MM-dd'T'HH:mm:ss.SSSZ"
    assert cfg.get("hoodie.keygen.timebased.output.dateformat") == "yyyy"  # the writer's own wins
    with pytest.raises(HoodieNotSupportedError, match="never upgrades or downgrades"):
        with_table_settings(HoodieConfig({"hoodie.write.table.version": "8"}), table)
    with pytest.raises(HoodieConfigError, match="keeps its merge mode"):
        with_table_settings(HoodieConfig({"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}), table)
    two = TableConfig({**table, tp.ORDERING_FIELDS: "a,b"})
    assert with_table_settings(HoodieConfig({}), two).get("hoodie.table.ordering.fields") == "a,b"
    # the table's first ordering field is the same setting; another one is refused, as Hudi's
    # validateTableConfig refuses it ("Config conflict ... PreCombineKey"): it would merge by
    # another field than every earlier write did
    first = with_table_settings(HoodieConfig({"hoodie.datasource.write.precombine.field": "a"}), two)
    assert first.get("hoodie.table.ordering.fields") == "a,b"
    with pytest.raises(HoodieConfigError, match="a table keeps its ordering fields"):
        with_table_settings(HoodieConfig({"hoodie.datasource.write.precombine.field": "c"}), two)
