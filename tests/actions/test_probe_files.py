"""A tag task tests the keys of several file slices against its batch keys together
(:func:`probe_files`): the answer must be the per-file probe's, file by file, whatever the
chunk of keys tested at once, with log updates and log deletes of a MERGE_ON_READ slice."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions.bucketing import existing_files
from airflow_hoodie.actions.index import probe_file, probe_files
from airflow_hoodie.actions.write import file_refs, write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig

CONF = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.small.file.limit": "0",
        "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def _batch(ids: range, part: str) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in ids], "p": [part] * len(ids), "v": list(ids)})


@pytest.fixture(scope="module")
def refs(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("probe") / "t")
    for lo in (0, 100, 200, 300):  # four file groups in a, one in b (small files are not filled)
        write_arrow(base, _batch(range(lo, lo + 100), "a"), "insert", CONF)
    write_arrow(base, _batch(range(0, 50), "b"), "insert", CONF)
    write_arrow(base, _batch(range(90, 110), "a"), "upsert", CONF)  # log updates in two groups
    write_arrow(base, _batch(range(195, 205), "a"), "delete", CONF)  # log deletes in two groups
    client = WriteClient(base, HoodieConfig(CONF))
    client.load_table()
    out = file_refs(client, existing_files(client.table), {})  # the table keeps meta fields: no key generator
    assert len(out) == 5 and sum(bool(r.log_files) for r in out) >= 3
    return out


@pytest.mark.parametrize("chunk_keys", [1, 150, 250, 10_000])
def test_several_slices_answer_as_each_does_alone(refs, chunk_keys: int) -> None:
    wanted = pa.array([f"k{i:04d}" for i in range(0, 420, 3)] + ["k0201", "nope"], pa.string())
    alone = pa.concat_tables([probe_file(r, wanted, False) for r in refs])
    together = probe_files(refs, wanted, chunk_keys)
    assert together.to_pylist() == alone.to_pylist()
    found = set(together.column("key").to_pylist())
    assert "k0201" not in found and "nope" not in found  # deleted in a log; never stored
    assert "k0099" in found and "k0300" in found and "k0003" in found
    assert sorted(set(together.column("partition").to_pylist())) == ["a", "b"]


def test_no_wanted_keys_reads_nothing(refs) -> None:
    assert probe_files(refs, pa.array([], pa.string())).num_rows == 0
