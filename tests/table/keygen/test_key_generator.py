"""Key generators must reproduce the record keys and partition paths real Hudi wrote."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.config import HoodieConfig, known
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieKeyError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.keygen.builtin_key_generators import (
    ComplexKeyGenerator,
    GlobalDeleteKeyGenerator,
    NonpartitionedKeyGenerator,
    SimpleKeyGenerator,
)
from airflow_hoodie.table.keygen.custom_key_generator import CustomKeyGenerator
from airflow_hoodie.table.keygen.java_text import (
    escape_path_name,
    java_string,
    unescape_path_name,
)
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.table.keygen.timestamp_key_generator import (
    TimestampBasedKeyGenerator,
)
from airflow_hoodie.table.properties import load_java_properties

RK = "hoodie.datasource.write.recordkey.field"
PP = "hoodie.datasource.write.partitionpath.field"
CLS = "hoodie.datasource.write.keygenerator.class"
HIVE = "hoodie.datasource.write.hive_style_partitioning"


def _tables(conformance):
    for props in sorted((conformance / "tables").glob("*/*/.hoodie/hoodie.properties")):
        yield props.parent.parent, load_java_properties(props.read_text())


def test_conformance_keys_and_partition_paths_match_hudi(conformance):
    seen = set()
    checked = 0
    for base, props in _tables(conformance):
        kg = KeyGenerator.from_config(props)
        assert kg.class_name == props["hoodie.table.keygenerator.class"]
        seen.add(type(kg).__name__)
        for f in sorted(base.rglob("*.parquet")):
            table = pq.read_table(f)
            keys, parts = kg.keys(table)
            assert keys.to_pylist() == table.column("_hoodie_record_key").to_pylist(), f
            assert parts.to_pylist() == table.column("_hoodie_partition_path").to_pylist(), f
            checked += 1
    assert checked >= 29
    assert {"SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator", "TimestampBasedKeyGenerator"} <= seen


# ---------------------------------------------------------------------- value text


def test_java_string_numbers_follow_java_tostring():
    doubles = pa.array([1.0, 0.1, 1e7, 1.5e-4, 123456.789, -0.0, float("nan"), float("inf"), 1e21, 0.001, 9999999.0, None])
    assert java_string(doubles).to_pylist() == [
        "1.0", "0.1", "1.0E7", "1.5E-4", "123456.789", "-0.0", "NaN", "Infinity", "1.0E21", "0.001", "9999999.0", None,
    ]
    floats = pa.array([1.0, 0.1, 1e7, 1.1, 3.4e38], pa.float32())
    assert java_string(floats).to_pylist() == ["1.0", "0.1", "1.0E7", "1.1", "3.4E38"]
    assert java_string(pa.array([-5, 0, 2**40])).to_pylist() == ["-5", "0", "1099511627776"]
    assert java_string(pa.array([True, False])).to_pylist() == ["true", "false"]
    dec = pa.array([decimal.Decimal("1.23400"), decimal.Decimal("-0.00010")], pa.decimal128(10, 5))
    assert java_string(dec).to_pylist() == ["1.23400", "-0.00010"]
    assert java_string(pa.array([dt.date(2023, 4, 1)])).to_pylist() == ["2023-04-01"]


def test_timestamps_are_raw_longs_unless_consistent_logical_timestamp():
    ts = pa.array([dt.datetime(2023, 4, 1, 12, 1, 0, 123000), dt.datetime(2023, 4, 1, 12, 1)], pa.timestamp("us"))
    assert java_string(ts).to_pylist() == ["1680350460123000", "1680350460000000"]
    assert java_string(ts, consistent_logical_timestamp=True).to_pylist() == [
        "2023-04-01 12:01:00.123",
        "2023-04-01 12:01:00.0",
    ]


def test_unsupported_key_type_is_reported():
    kg = SimpleKeyGenerator({RK: "b", PP: "p"})
    with pytest.raises(HoodieNotSupportedError, match="'b'"):
        kg.record_keys(pa.table({"b": [b"x"], "p": ["a"]}))


# ---------------------------------------------------------------------- record keys


def test_simple_record_key_rejects_null_and_empty_naming_the_field():
    kg = SimpleKeyGenerator({RK: "id", PP: "p"})
    with pytest.raises(HoodieKeyError, match="'id'"):
        kg.record_keys(pa.table({"id": [1, None], "p": ["a", "b"]}))
    kg2 = SimpleKeyGenerator({RK: "name", PP: "p"})
    with pytest.raises(HoodieKeyError, match="cannot be null or empty"):
        kg2.record_keys(pa.table({"name": ["x", ""], "p": ["a", "b"]}))


def test_missing_field_names_the_field_and_columns():
    kg = SimpleKeyGenerator({RK: "uuid", PP: "p"})
    with pytest.raises(HoodieKeyError, match="'uuid' is not a column"):
        kg.record_keys(pa.table({"id": [1], "p": ["a"]}))


def test_complex_keys_with_placeholders():
    kg = ComplexKeyGenerator({RK: "id, name", PP: "p"})
    t = pa.table({"id": [1, 2, None], "name": ["a", "", "z"], "p": ["x", "y", "z"]})
    assert kg.record_keys(t).to_pylist() == ["id:1,name:a", "id:2,name:__empty__", "id:__null__,name:z"]
    with pytest.raises(HoodieKeyError, match="all null or empty"):
        kg.record_keys(pa.table({"id": [None], "name": [""], "p": ["x"]}))


def test_complex_single_field_encoding_follows_the_hudi_7001_settings():
    t = pa.table({"id": [7], "p": ["x"]})
    assert ComplexKeyGenerator({RK: "id", PP: "p"}).record_keys(t).to_pylist() == ["id:7"]
    new = ComplexKeyGenerator({RK: "id", PP: "p", "hoodie.write.complex.keygen.new.encoding": "true"})
    assert new.record_keys(t).to_pylist() == ["7"]
    recorded = ComplexKeyGenerator(
        {RK: "id", PP: "p", "hoodie.write.complex.keygen.new.encoding": "true", "hoodie.table.complex.keygen.encoding": "FIELD_PREFIXED"}
    )
    assert recorded.record_keys(t).to_pylist() == ["id:7"]


def test_nested_record_key_field():
    kg = NonpartitionedKeyGenerator({RK: "s.a"})
    t = pa.table({"s": [{"a": 1}, {"a": 2}]})
    assert kg.record_keys(t).to_pylist() == ["1", "2"]
    assert kg.partition_paths(t).to_pylist() == ["", ""]
    with pytest.raises(HoodieKeyError, match="'s.a'"):
        kg.record_keys(pa.table({"s": pa.array([{"a": 1}, None], pa.struct([("a", pa.int64())]))}))


def test_nonpartitioned_and_global_delete_multi_field_keys():
    t = pa.table({"a": [1], "b": ["x"]})
    assert NonpartitionedKeyGenerator({RK: "a,b"}).record_keys(t).to_pylist() == ["a:1,b:x"]
    g = GlobalDeleteKeyGenerator({RK: "a"})
    assert g.keys(t)[0].to_pylist() == ["a:1"] and g.partition_paths(t).to_pylist() == [""]


# ---------------------------------------------------------------------- partition paths


def test_partition_paths_default_hive_style_and_url_encoding():
    t = pa.table({"id": [1, 2, 3], "p": ["x/y", None, ""], "q": [1, 2, None]})
    plain = ComplexKeyGenerator({RK: "id", PP: "p,q"})
    assert plain.partition_paths(t).to_pylist() == [
        "x/y/1",
        "__HIVE_DEFAULT_PARTITION__/2",
        "__HIVE_DEFAULT_PARTITION__/__HIVE_DEFAULT_PARTITION__",
    ]
    hive = ComplexKeyGenerator({RK: "id", PP: "p,q", HIVE: "true", "hoodie.datasource.write.partitionpath.urlencode": "true"})
    assert hive.partition_paths(t).to_pylist() == [
        "p=x%2Fy/q=1",
        "p=__HIVE_DEFAULT_PARTITION__/q=2",
        "p=__HIVE_DEFAULT_PARTITION__/q=__HIVE_DEFAULT_PARTITION__",
    ]


def test_escape_path_name_like_hive():
    assert escape_path_name('a:b=c/d%e#f"g\'h*i?j\\k{l[m]n^o\x01\x7f p') == (
        "a%3Ab%3Dc%2Fd%25e%23f%22g%27h%2Ai%3Fj%5Ck%7Bl%5Bm%5Dn%5Eo%01%7F p"
    )
    assert escape_path_name("") == "__HIVE_DEFAULT_PARTITION__"
    assert unescape_path_name(escape_path_name("2023/04:01=x")) == "2023/04:01=x"


# ---------------------------------------------------------------------- timestamp based


def _ts_gen(ts_type: str, **extra: str) -> TimestampBasedKeyGenerator:
    props = {
        RK: "id",
        PP: "ts",
        CLS: "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": ts_type,
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH",
    }
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    kg = KeyGenerator.from_config(props)
    assert isinstance(kg, TimestampBasedKeyGenerator)
    return kg


def _paths(kg, values):
    return kg.partition_paths(pa.table({"id": list(range(len(values))), "ts": values})).to_pylist()


def test_timestamp_unix_epoch_and_scalar_units():
    assert _paths(_ts_gen("UNIX_TIMESTAMP"), [1680350460, None]) == ["2023/04/01/12", "1970/01/01/00"]
    assert _paths(_ts_gen("EPOCHMILLISECONDS"), [1680350460123, -1]) == ["2023/04/01/12", "1969/12/31/23"]
    assert _paths(_ts_gen("EPOCHMICROSECONDS"), [1680350460123456]) == ["2023/04/01/12"]
    days = _ts_gen("SCALAR", **{"hoodie_keygen_timebased_timestamp_scalar_time_unit": "DAYS"})
    assert _paths(days, [19448]) == ["2023/04/01/00"]
    # doubles truncate toward zero like Double.longValue()
    assert _paths(_ts_gen("UNIX_TIMESTAMP"), [1680350460.9]) == ["2023/04/01/12"]


def test_timestamp_time_zones():
    kg = _ts_gen("EPOCHMILLISECONDS", hoodie_keygen_timebased_timezone="GMT+8")
    assert _paths(kg, [1680350460123]) == ["2023/04/01/20"]
    kg = _ts_gen("EPOCHMILLISECONDS", hoodie_keygen_timebased_output_timezone="America/Los_Angeles")
    assert _paths(kg, [1680350460123, 1673352000000]) == ["2023/04/01/05", "2023/01/10/04"]  # PDT / PST


def test_timestamp_date_strings_with_several_formats_and_zones():
    kg = _ts_gen(
        "DATE_STRING",
        hoodie_keygen_timebased_input_dateformat="yyyy-MM-dd HH:mm,yyyyMMdd",
        hoodie_keygen_timebased_input_timezone="America/Los_Angeles",
        hoodie_keygen_timebased_output_timezone="UTC",
    )
    assert _paths(kg, ["2023-04-01 23:30", "20230402", None]) == ["2023/04/02/06", "2023/04/02/07", "1970/01/01/00"]
    # no zones configured: the offset in the value decides both the instant and the output zone
    kg = _ts_gen("DATE_STRING", hoodie_keygen_timebased_input_dateformat="yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert _paths(kg, ["2023-04-01T12:01:00.123Z", "2023-04-01T23:01:00.000+0530"]) == ["2023/04/01/12", "2023/04/01/23"]
    with pytest.raises(HoodieKeyError, match="Unable to parse"):
        _paths(kg, ["not a date"])


def test_timestamp_hive_style_and_missing_config():
    kg = KeyGenerator.from_config(
        {
            RK: "id",
            PP: "ts",
            CLS: "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd",
            HIVE: "true",
        }
    )
    assert kg.partition_paths(pa.table({"id": [1], "ts": [0]})).to_pylist() == ["ts=1970-01-01"]
    with pytest.raises(HoodieConfigError, match="timestamp.type"):
        KeyGenerator.from_config({RK: "id", PP: "ts", CLS: "org.apache.hudi.keygen.TimestampBasedKeyGenerator"})


def test_custom_key_generator():
    kg = KeyGenerator.from_config(
        {
            RK: "id",
            PP: "region:simple,ts:timestamp",
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyyMMdd",
            HIVE: "true",
        }
    )
    assert isinstance(kg, CustomKeyGenerator)
    t = pa.table({"id": [1, 2], "region": ["eu", None], "ts": [0, 86_400_000]})
    assert kg.partition_paths(t).to_pylist() == ["region=eu/ts=19700101", "region=__HIVE_DEFAULT_PARTITION__/ts=19700102"]
    assert kg.partition_field_names == ["region", "ts"]


# ---------------------------------------------------------------------- factory and config


def test_inference_and_class_and_type_names():
    assert type(KeyGenerator.from_config({RK: "id"})) is NonpartitionedKeyGenerator
    assert type(KeyGenerator.from_config({RK: "id", PP: "p"})) is SimpleKeyGenerator
    assert type(KeyGenerator.from_config({RK: "a,b", PP: "p"})) is ComplexKeyGenerator
    assert type(KeyGenerator.from_config({RK: "a", PP: "p,q"})) is ComplexKeyGenerator
    assert type(KeyGenerator.from_config({RK: "a", PP: "p", "hoodie.datasource.write.keygenerator.type": "COMPLEX"})) is ComplexKeyGenerator
    assert type(KeyGenerator.from_config({RK: "a", CLS: "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator"})) is NonpartitionedKeyGenerator
    with pytest.raises(HoodieNotSupportedError):
        KeyGenerator.from_config({RK: "a", CLS: "com.example.MyKeyGen"})
    # no record key field: Hudi 0.14+ generates the keys at write time (inserts only)
    assert KeyGenerator.from_config({PP: "p"}).auto_record_keys
    with pytest.raises(HoodieConfigError, match="ComplexKeyGenerator"):
        SimpleKeyGenerator({RK: "a,b", PP: "p"})


def test_table_config_names_are_accepted():
    props = {
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.partition.fields": "p",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        HIVE: "true",
    }
    kg = KeyGenerator.from_config(HoodieConfig(props))
    assert kg.keys(pa.table({"id": [5], "p": ["x"]}))[1].to_pylist() == ["p=x"]
    # write config wins over the table config
    kg = KeyGenerator.from_config({**props, RK: "other"})
    assert kg.record_key_fields == ["other"]


def test_config_keys_are_registered():
    for key in (RK, PP, CLS, HIVE, "hoodie.datasource.write.partitionpath.urlencode", "hoodie.keygen.timebased.timestamp.type",
                "hoodie.keygen.timebased.output.dateformat", "hoodie.table.recordkey.fields"):
        assert known(key), key


def test_vectorized_on_large_batches():
    import time

    n = 1_000_000
    t = pa.table({"id": pa.array(range(n)), "p": pa.array([f"p{i % 7}" for i in range(n)]), "d": pa.array([i * 0.5 for i in range(n)])})
    kg = ComplexKeyGenerator({RK: "id,d", PP: "p", HIVE: "true"})
    start = time.perf_counter()
    keys, parts = kg.keys(t)
    elapsed = time.perf_counter() - start
    assert keys[3].as_py() == "id:3,d:1.5" and parts[3].as_py() == "p=p3"
    assert elapsed < 30, elapsed
