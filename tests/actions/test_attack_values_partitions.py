"""Attack: partition pruning on the values Hudi's key generators turn into partition paths. A
read with a filter on the partition column maps each path back to a typed value and drops the
partitions whose value cannot match: if the path's text is not the value the rows hold (Java's
text of a float or a decimal, a url-encoded string, ``__HIVE_DEFAULT_PARTITION__`` for a null
or an empty string), rows vanish from the filtered read without a word. The filtered read must
return what the unfiltered read returns once filtered (pyarrow, same expression)."""

from __future__ import annotations

import datetime
import glob
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.read import filters_to_expression, read_table

OPS = ("==", ">=", "!=")


def _write(base: str, typ: pa.DataType, values: list[Any], **extra: str) -> None:
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true",
           **extra}
    data = pa.table({"id": [f"k{i}" for i in range(len(values))], "ts": [1] * len(values), "p": pa.array(values, typ)})
    write_arrow(base, data, "upsert", cfg)


def _mismatches(base: str, probes: list[Any]) -> list[tuple[tuple[str, str, Any], list[str], list[str]]]:
    """(filter, filtered read's ids, unfiltered read filtered by pyarrow) wherever they differ."""
    full = read_table(base)
    out = []
    for value in probes:
        for op in OPS:
            flt = ("p", op, value)
            got = sorted(read_table(base, columns=["id"], filters=[flt]).column("id").to_pylist())
            want = sorted(full.filter(filters_to_expression([flt], full.schema)).column("id").to_pylist())
            if got != want:
                out.append((flt, got, want))
    return out


UTC = datetime.timezone.utc
CASES: dict[str, tuple[pa.DataType, list[Any], dict[str, str]]] = {
    "int": (pa.int32(), [5, -3, None, 10], {}),
    "date_hive": (pa.date32(), [datetime.date(2024, 1, 1), datetime.date(1969, 1, 1), None],
                  {"hoodie.datasource.write.hive_style_partitioning": "true"}),
    # BigDecimal.toString: '1.00000E-7', '0E-12', '-1E-12'
    "decimal": (pa.decimal128(20, 12), [decimal.Decimal("0.000000100000"), decimal.Decimal("0E-12"),
                                        decimal.Decimal("-0.000000000001"), None], {}),
    # Double.toString: '1.0E10', '-1.0E-5', 'NaN', 'Infinity', '-0.0'
    "double": (pa.float64(), [0.1, 1e10, -1e-5, float("nan"), float("inf"), -0.0], {}),
    "float": (pa.float32(), [0.1, 1e10, -1e-5, 3.3], {}),
    "bool": (pa.bool_(), [True, False, None], {}),
    # a sub-millisecond instant: Java's Timestamp text keeps milliseconds only
    "timestamp_text": (pa.timestamp("us", tz="UTC"),
                       [datetime.datetime(2024, 1, 1, 0, 0, 0, 500, tzinfo=UTC),
                        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)],
                       {"hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled": "true"}),
    "urlencoded_hive": (pa.string(), ["a/b", "x%y", "c=d", "é ü", "%41", "#?"],
                        {"hoodie.datasource.write.partitionpath.urlencode": "true",
                         "hoodie.datasource.write.hive_style_partitioning": "true"}),
    "not_urlencoded_percent": (pa.string(), ["x%41", "%2F", "a"], {}),
}


def test_partition_pruning_on_typed_and_encoded_values_keeps_every_row(tmp_path: Path) -> None:
    """Ints, dates before the epoch, decimals in scientific notation, Java float text (NaN,
    infinities, -0.0), booleans, millisecond timestamp text, url-encoded paths: no row lost."""
    bad = {}
    for name, (typ, values, extra) in CASES.items():
        base = str(tmp_path / name)
        _write(base, typ, values, **extra)
        probes = [v for v in values if v is not None]
        bad[name] = _mismatches(base, probes)
    assert bad == {name: [] for name in CASES}


@pytest.mark.parametrize("hive_style", ["false", "true"])
def test_an_empty_string_partition_value_survives_pruning(tmp_path: Path, hive_style: str) -> None:
    """Hudi writes a null and an empty string both to ``__HIVE_DEFAULT_PARTITION__`` but keeps
    the row's own value in the file; a filter on the value must find the row."""
    base = str(tmp_path / "t")
    _write(base, pa.string(), ["", "a", None, "__HIVE_DEFAULT_PARTITION__"],
           **{"hoodie.datasource.write.hive_style_partitioning": hive_style})
    assert _mismatches(base, ["", "a", "__HIVE_DEFAULT_PARTITION__"]) == []


def _as_if_partition_columns_were_dropped(base: str) -> None:
    """The layout Hudi writes with ``hoodie.datasource.write.drop.partition.columns=true``: base
    files without the partition column (its values only in the paths), the option in hoodie.properties."""
    for path in glob.glob(f"{base}/**/*.parquet", recursive=True):
        data = pq.ParquetFile(path)
        pq.write_table(data.read().drop_columns(["p"]).replace_schema_metadata(data.metadata.metadata), path)
    props = Path(base, ".hoodie", "hoodie.properties")
    text = props.read_text()
    assert "hoodie.datasource.write.drop.partition.columns=false" in text
    props.write_text(text.replace("hoodie.datasource.write.drop.partition.columns=false",
                                  "hoodie.datasource.write.drop.partition.columns=true"))


@pytest.mark.parametrize("typ,value", [(pa.string(), "a"), (pa.int32(), 3)])
def test_a_dropped_partition_columns_default_partition_reads_as_null(tmp_path: Path, typ: pa.DataType,
                                                                     value: Any) -> None:
    base = str(tmp_path / "t")
    _write(base, typ, [value, None], **{"hoodie.metadata.enable": "false"})
    _as_if_partition_columns_were_dropped(base)
    assert sorted((r["id"], r["p"]) for r in read_table(base).to_pylist()) == [("k0", value), ("k1", None)]
    assert read_table(base, columns=["id"], filters=[("p", "==", value)]).column("id").to_pylist() == ["k0"]
