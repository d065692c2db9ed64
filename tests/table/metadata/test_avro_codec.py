"""Avro codecs: every bundled schema round-trips, and Hudi's own files read and re-write byte for byte."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieSchemaError
from airflow_hoodie.table.metadata import avro_codec

TOP_LEVEL = [
    "HoodieCompactionPlan",
    "HoodieCleanerPlan",
    "HoodieCleanMetadata",
    "HoodieRequestedReplaceMetadata",
    "HoodieClusteringPlan",
    "HoodieRollbackPlan",
    "HoodieRollbackMetadata",
    "HoodieSavepointMetadata",
    "HoodieRestoreMetadata",
    "HoodieRestorePlan",
    "HoodieArchivedMetaEntry",
    "HoodieCommitMetadata",
    "HoodieReplaceCommitMetadata",
    "HoodieMergeArchiveFilePlan",
    "HoodieDeleteRecordList",
    "HoodieInstantInfo",
    "HoodieIndexPlan",
    "HoodieIndexCommitMetadata",
    "HoodieCompactionMetadata",
]

ROLLBACK_DIR = "tables/mor/v6_nonpartitioned_rollback/.hoodie"
REPLACE_DIR = "tables/cow/v6_simplekeygen_nonhivestyle_overwritetable/.hoodie"


def _sample(schema: Any, named: dict[str, Any], depth: int = 0) -> Any:
    """A value of ``schema`` with every optional part filled (non-null branch of unions)."""
    if isinstance(schema, str):
        primitives = {
            "null": None, "boolean": True, "int": 7, "long": 1 << 40, "float": 1.5,
            "double": 2.25, "bytes": b"\x00\x01", "string": f"s{depth}",
        }
        if schema in primitives:
            return primitives[schema]
        return _sample(named[schema], named, depth + 1)
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return _sample(branches[0], named, depth) if branches else None
    kind = schema["type"]
    if kind == "record":
        named[schema["name"]] = schema
        return {f["name"]: _sample(f["type"], named, depth + 1) for f in schema["fields"]}
    if kind == "array":
        return [_sample(schema["items"], named, depth + 1)]
    if kind == "map":
        return {"k": _sample(schema["values"], named, depth + 1)}
    if schema.get("logicalType") == "decimal":
        import decimal

        return decimal.Decimal("1.5").quantize(decimal.Decimal(1).scaleb(-schema["scale"]))
    return _sample(kind, named, depth)


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_every_schema_round_trips(name: str) -> None:
    record = _sample(avro_codec.get_schema(name), {})
    data = avro_codec.serialize(name, record)
    assert data.startswith(b"Obj\x01")
    assert avro_codec.deserialize(data, name) == record
    # without a schema name the embedded writer schema is used; same content
    assert avro_codec.deserialize(data) == record
    # a generic Avro reader sees exactly one record and the null codec
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "null"
    assert list(reader) == [record]


def test_every_bundled_type_parses() -> None:
    names = avro_codec.schema_names()
    assert len(names) >= 40
    for name in names:
        assert avro_codec.get_schema(name)


def test_defaults_fill_absent_fields() -> None:
    plan = avro_codec.default_record("HoodieCleanerPlan", policy="KEEP_LATEST_COMMITS")
    assert plan["version"] == 1 and plan["lastCompletedCommitTimestamp"] == ""
    back = avro_codec.deserialize(avro_codec.serialize("HoodieCleanerPlan", plan), "HoodieCleanerPlan")
    assert back == plan
    with pytest.raises(HoodieSchemaError, match="policy"):
        avro_codec.default_record("HoodieCleanerPlan")
    with pytest.raises(HoodieSchemaError, match="nope"):
        avro_codec.default_record("HoodieCleanerPlan", policy="x", nope=1)


def test_schema_facts_match_hudi() -> None:
    entry = avro_codec.schema_dict("HoodieArchivedMetaEntry")
    assert entry["namespace"] == "org.apache.hudi.avro.model"
    assert [f["name"] for f in entry["fields"]] == [
        "hoodieCommitMetadata", "hoodieCleanMetadata", "hoodieCompactionMetadata",
        "hoodieRollbackMetadata", "hoodieSavePointMetadata", "commitTime", "actionType", "version",
        "hoodieCompactionPlan", "hoodieCleanerPlan", "actionState", "hoodieReplaceCommitMetadata",
        "hoodieRequestedReplaceMetadata", "HoodieInflightReplaceMetadata",
        "hoodieIndexCommitMetadata", "stateTransitionTime",  # no Hudi version has hoodieIndexPlan
    ]
    op = avro_codec.schema_dict("HoodieCompactionOperation")
    assert [f["name"] for f in op["fields"]] == [
        "baseInstantTime", "deltaFilePaths", "dataFilePath", "fileId", "partitionPath", "metrics",
        "bootstrapFilePath",
    ]
    assert "default" not in op["fields"][0]  # Hudi gives baseInstantTime no default


def test_unknown_schema_name() -> None:
    with pytest.raises(HoodieSchemaError, match="Unknown Hudi Avro schema"):
        avro_codec.get_schema("HoodieNoSuchThing")


@pytest.mark.parametrize(
    "rel,name",
    [
        (f"{ROLLBACK_DIR}/20250126040936578.rollback", "HoodieRollbackMetadata"),
        (f"{ROLLBACK_DIR}/20250126040936578.rollback.requested", "HoodieRollbackPlan"),
        (f"{REPLACE_DIR}/20240707001303088.replacecommit.requested", "HoodieRequestedReplaceMetadata"),
    ],
)
def test_hudi_written_files_read_and_rewrite_identically(conformance, rel: str, name: str) -> None:
    data = (conformance / rel).read_bytes()
    record = avro_codec.deserialize(data, name)
    assert avro_codec.writer_schema_name(data) == f"org.apache.hudi.avro.model.{name}"
    # Same schema text, same layout: only the random sync marker differs between writers.
    assert avro_codec.serialize(name, record, sync_marker=data[-16:]) == data
    embedded = fastavro.reader(io.BytesIO(data)).metadata["avro.schema"]
    assert embedded == avro_codec.schema_json(name)
    json.loads(embedded)


def test_conformance_rollback_content(conformance) -> None:
    meta = avro_codec.deserialize((conformance / ROLLBACK_DIR / "20250126040936578.rollback").read_bytes())
    assert meta["commitsRollback"] == ["20250126040826878"]
    assert meta["instantsRollback"] == [{"commitTime": "20250126040826878", "action": "deltacommit"}]
    plan = avro_codec.deserialize(
        (conformance / ROLLBACK_DIR / "20250126040936578.rollback.requested").read_bytes(), "HoodieRollbackPlan"
    )
    assert plan["instantToRollback"]["action"] == "deltacommit"
    assert len(plan["RollbackRequests"]) == 2


def test_schemaless_datum_round_trip() -> None:
    deletes = {
        "deleteRecordList": [
            {"recordKey": "k1", "partitionPath": "p", "orderingVal": {"value": 5}},
            {"recordKey": "k2", "partitionPath": "", "orderingVal": None},
        ]
    }
    data = avro_codec.encode_datum("HoodieDeleteRecordList", deletes)
    assert avro_codec.decode_datum("HoodieDeleteRecordList", data) == deletes
    named = avro_codec.decode_datum("HoodieDeleteRecordList", data, return_record_name=True)
    assert named["deleteRecordList"][0]["orderingVal"][0] == "org.apache.hudi.avro.model.IntWrapper"


@pytest.mark.parametrize(
    "data,match",
    [
        (b"", "empty"),
        (b"{\"not\": \"avro\"}", "not an Avro container file"),
        (b"Obj\x01\x02garbage", "damaged Avro container"),
    ],
)
def test_malformed_bytes_raise_corrupted(data: bytes, match: str) -> None:
    with pytest.raises(HoodieCorruptedDataError, match=match):
        avro_codec.deserialize(data, "HoodieCleanerPlan")


def test_truncated_file_raises_corrupted() -> None:
    data = avro_codec.serialize("HoodieInstantInfo", {"commitTime": "001", "action": "commit"})
    with pytest.raises(HoodieCorruptedDataError):
        avro_codec.deserialize(data[:-20], "HoodieInstantInfo")


def test_wrong_schema_raises_corrupted() -> None:
    data = avro_codec.serialize("HoodieInstantInfo", {"commitTime": "001", "action": "commit"})
    with pytest.raises(HoodieCorruptedDataError, match="not the expected"):
        avro_codec.deserialize(data, "HoodieCleanerPlan")


def test_bad_record_raises_schema_error() -> None:
    with pytest.raises(HoodieSchemaError, match="HoodieInstantInfo"):
        avro_codec.serialize("HoodieInstantInfo", {"commitTime": 5, "action": None})


def test_name_first_argument_order_accepted() -> None:
    data = avro_codec.serialize("HoodieInstantInfo", {"commitTime": "001", "action": "commit"})
    assert avro_codec.deserialize("HoodieInstantInfo", data) == {"commitTime": "001", "action": "commit"}


def test_older_writer_schema_resolves_to_ours() -> None:
    """A cleaner plan written before lastCompletedCommitTimestamp existed reads with the default."""
    old = json.loads(json.dumps(avro_codec.schema_dict("HoodieCleanerPlan")))
    old["fields"] = [f for f in old["fields"] if f["name"] != "lastCompletedCommitTimestamp"]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(old), [{
        "earliestInstantToRetain": None, "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {"p": ["a.parquet"]}, "version": 1,
        "filePathsToBeDeletedPerPartition": None, "partitionsToBeDeleted": None,
    }])
    plan = avro_codec.deserialize(buf.getvalue(), "HoodieCleanerPlan")
    assert plan["lastCompletedCommitTimestamp"] == ""
    assert plan["filesToBeDeletedPerPartition"] == {"p": ["a.parquet"]}
    # a newer writer with an extra trailing field: the field is dropped, the rest is read
    new = json.loads(json.dumps(avro_codec.schema_dict("HoodieCompactionPlan")))
    new["fields"].append({"name": "futureField", "type": ["null", "string"], "default": None})
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(new), [{"operations": [], "version": 2, "futureField": "x"}])
    assert avro_codec.deserialize(buf.getvalue(), "HoodieCompactionPlan") == {
        "operations": [], "extraMetadata": None, "version": 2, "strategy": None, "preserveHoodieMetadata": False,
    }
