"""Secondary indexes kept exact on the DataFrame path: the Spark write completes through the same
commit path as the in-process one, so the index change is derived from its committed files
alike. A copy of Hudi 1.1's v9 MOR table (V2 indexes) and a v8 COW table of ours (V1) take a
value-changing upsert with inserts, then a delete, through ``upsert_dataframe``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table
from tests.actions.secondary_index_fixtures import (
    AWKWARD,
    FAST,
    check_indexes,
    v8_table_with_index,
)
from tests.table.table_files import copy_conformance_table


def _data(rows: pa.Table) -> pa.Table:
    return rows.drop_columns([n for n in rows.column_names if n.startswith("_hoodie_")])


def _with(rows: pa.Table, column: str, values: list) -> pa.Table:
    return rows.set_column(rows.schema.get_field_index(column), column, pa.array(values, rows.schema.field(column).type))


@pytest.mark.parametrize("which", ["v9-mor", "v8-cow"])
def test_the_dataframe_path_keeps_the_secondary_indexes_exact(spark, conformance_next, tmp_path, which):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    if which == "v9-mor":
        base = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path)
    else:
        base = v8_table_with_index(tmp_path, "COPY_ON_WRITE")
    cfg = HoodieConfig({**FAST, "hoodie.datasource.write.recordkey.field": "txn_id", DRIVER_BATCH_MAX_BYTES: "0"})
    start = check_indexes(base, "start")
    rows = _data(read_table(str(base)).sort_by("_hoodie_record_key"))
    later = _with(rows.slice(0, 4), "txn_ts", [2 ** 50] * 4)
    changed = _with(later.slice(0, 2), "merchant_name", AWKWARD[:2])
    inserted = _with(_with(later.slice(2, 2), "txn_id", ["SPK-1", "SPK$2"]), "merchant_name", AWKWARD[2:])
    frame = spark.createDataFrame(pa.concat_tables([changed, inserted]).to_pandas(), schema=None)
    upsert_dataframe(spark, frame, str(base), "upsert", cfg, "si")
    assert check_indexes(base, "spark upsert")["secondary_index_merchant_idx"] == start["secondary_index_merchant_idx"] + 2
    upsert_dataframe(spark, spark.createDataFrame(rows.slice(5, 2).to_pandas()), str(base), "delete", cfg, "si")
    assert check_indexes(base, "spark delete")["secondary_index_merchant_idx"] == start["secondary_index_merchant_idx"]
