"""The simple bucket index on an ``s3://`` table (moto's endpoint), MERGE_ON_READ version 9:
inserts, an upsert with new buckets, a delete and a compaction through the object store keep
every row in its bucket's group; a default-index write is refused without a change; hudi-rs
reads the rows our reader reads."""

from __future__ import annotations

import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_bucket_index import _batch, _check_layout, _conf
from tests.s3.conftest import S3Place
from tests.table.normalize import hudi_rs_rows, normalize_table


def test_bucket_index_on_s3(s3: S3Place) -> None:
    uri, opts = s3.uri("bucket"), s3.storage_options
    conf = _conf(9, "MERGE_ON_READ")
    write_arrow(uri, _batch([f"k{i}" for i in range(16)], 1), "insert", conf, storage_options=opts)
    first = _check_layout(uri, ["id"], 4, 9, opts)
    write_arrow(uri, _batch([f"k{i}" for i in range(0, 16, 4)] + ["n1", "n2"], 2, parts=["b"] * 4 + ["a", "b"]),
                "upsert", conf, storage_options=opts)
    write_arrow(uri, _batch(["k1"], 3, parts=["a"]), "delete", conf, storage_options=opts)
    plain = {k: v for k, v in conf.items() if k != "hoodie.index.type"}
    with pytest.raises(HoodieNotSupportedError, match="hoodie.index.type=BUCKET"):
        write_arrow(uri, _batch(["z"], 4), "upsert", plain, storage_options=opts)
    assert c.schedule_compaction(HoodieTable.load(uri, storage_options=opts), HoodieConfig({}), force=True) \
        .instant is not None
    done = c.execute_pending_compactions(HoodieTable.load(uri, storage_options=opts), LocalExecutor(),
                                         HoodieConfig({}), storage_options=opts)
    assert done["state"] == "completed", done
    after = _check_layout(uri, ["id"], 4, 9, opts)
    assert all(after[k] == fid for k, fid in first.items())
    ours = read_table(uri, storage_options=opts)
    assert ours.num_rows == 17
    assert hudi_rs_rows(uri, storage_options=s3.hudi_rs_options) == normalize_table(ours)
