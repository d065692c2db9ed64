"""Expression-index definitions read from a Hudi 1.1 table's ``index.json``: the function and its
options as Hudi records them, applied to a column; an unknown function refused by name."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.table.expression_index.definitions import (
    ExpressionIndexDefinition,
    expression_index_definitions,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.table.table_files import copy_conformance_table


def _with_definitions(conformance_next, tmp_path, extra: dict) -> HoodieTable:
    base = copy_conformance_table(conformance_next, "cow/v9_txns_simple_meta", tmp_path)
    path = base / ".hoodie" / ".index_defs" / "index.json"
    doc = json.loads(path.read_text())
    doc["indexDefinitions"].update(extra)
    path.write_text(json.dumps(doc, indent=2))
    return HoodieTable.load(str(base))


def _definition(name, index_type, function, fields, options):
    return {name: {"indexName": name, "indexType": index_type, "indexFunction": function, "sourceFields": fields,
                   "indexOptions": options, "version": "V1"}}


def test_a_table_without_expression_indexes_has_none(conformance_next, tmp_path):
    table = _with_definitions(conformance_next, tmp_path, {})
    assert expression_index_definitions(table) == []  # record_index, column_stats, two secondary indexes


def test_definitions_are_read_with_their_function_and_options(conformance_next, tmp_path):
    table = _with_definitions(conformance_next, tmp_path, {
        **_definition("expr_index_day_idx", "column_stats", "from_unixtime", ["ts"],
                      {"expr": "from_unixtime", "format": "yyyy-MM-dd"}),
        **_definition("expr_index_name_bloom", "bloom_filters", "lower", ["merchant_name"],
                      {"expr": "lower", "numentries": "1000", "fpp": "0.01"}),
    })
    day, bloom = expression_index_definitions(table)
    assert day == ExpressionIndexDefinition("expr_index_day_idx", "column_stats", "from_unixtime", "ts",
                                            {"expr": "from_unixtime", "format": "yyyy-MM-dd"}, "V1")
    assert day.partition == "expr_index_day_idx"
    assert day.apply(pa.array([1700000000, None]), "America/New_York").to_pylist() == ["2023-11-14", None]
    assert (bloom.index_type, bloom.function, bloom.source_field) == ("bloom_filters", "lower", "merchant_name")
    assert bloom.apply(pa.chunked_array([["Café ACME"]])).to_pylist() == ["café acme"]


def test_an_unsupported_function_is_refused_by_name(conformance_next, tmp_path):
    table = _with_definitions(conformance_next, tmp_path, _definition(
        "expr_index_parts", "column_stats", "split", ["merchant_name"], {"expr": "split", "pattern": ","}))
    with pytest.raises(HoodieNotSupportedError, match="'split'"):
        expression_index_definitions(table)


@pytest.mark.parametrize(("index_type", "fields", "options", "message"), [
    ("column_stats", ["a", "b"], {}, "exactly one source field"),
    ("secondary_index", ["a"], {}, "indexType"),
    ("column_stats", ["a"], {"format": "yyyy"}, "not valid for expression index function upper"),
    ("column_stats", ["a"], {"numentries": "10"}, "not valid"),  # bloom options only on bloom_filters
])
def test_malformed_definitions_are_errors_naming_the_index(conformance_next, tmp_path, index_type, fields, options,
                                                            message):
    table = _with_definitions(conformance_next, tmp_path, _definition("expr_index_x", index_type, "upper", fields,
                                                                      options))
    with pytest.raises(HoodieConfigError, match=f"expression index expr_index_x: .*{message}"):
        expression_index_definitions(table)
