"""The write flow without Spark (LocalExecutor): every operation and index vs a Python model."""

from __future__ import annotations

import http.server
import json
import random
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieError, HoodieKeyError, HoodieSchemaError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import meta_files
from tests.actions.table_versions import current_version, table_version, version_settings  # noqa: F401
from tests.actions.write_model import TableModel, actual, random_batch, to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table

pytestmark = pytest.mark.usefixtures("table_version")



def conf(table_type: str = "COPY_ON_WRITE", partitioned: bool = True, index: str = "SIMPLE", **extra: str) -> dict:
    c = {
        "hoodie.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.index.type": index,
        # small files so inserts exercise small-file packing and several file groups
        "hoodie.copyonwrite.record.size.estimate": "64",
        "hoodie.parquet.max.file.size": str(64 * 40),
        "hoodie.parquet.small.file.limit": str(64 * 20),
    }
    if partitioned:
        c["hoodie.datasource.write.partitionpath.field"] = "p"
    c.update(version_settings())
    c.update(extra)
    return c


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM", "IN_MEMORY"])
def test_upserts_and_deletes_match_model(tmp_path, table_type, partitioned, index):
    rng = random.Random(hash((table_type, partitioned, index)) & 0xFFFF)
    base = str(tmp_path / "t")
    glob = index.startswith("GLOBAL") or index == "IN_MEMORY"
    model = TableModel(partitioned, glob)
    parts = ["a", "b", "c"] if partitioned else ["x"]
    sticky = None if glob else {}
    for step in range(5):
        op = "delete" if step == 3 else "upsert"
        batch = random_batch(rng, 60, 40, step * 10, parts, sticky)
        write_arrow(base, to_arrow(batch), op, conf(table_type, partitioned, index), table_name="t")
        model.apply(op, batch)
        assert actual(read_table(base)) == model.expected(), f"step {step}"
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    table = HoodieTable.load(base)
    assert not table.timeline.pending().instants


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_insert_bulk_insert_and_overwrites(tmp_path, table_type):
    base = str(tmp_path / "t")
    model = TableModel(True)
    c = conf(table_type)
    b1 = [{"id": i, "ts": 1, "p": "ab"[i % 2], "v": f"a{i}"} for i in range(30)]
    write_arrow(base, to_arrow(b1), "bulk_insert", c, table_name="t"); model.apply("bulk_insert", b1)
    b2 = [{"id": i, "ts": 1, "p": "abc"[i % 3], "v": f"b{i}"} for i in range(30, 50)]
    write_arrow(base, to_arrow(b2), "insert", c); model.apply("insert", b2)
    assert actual(read_table(base)) == model.expected()
    b3 = [{"id": i, "ts": 2, "p": "a", "v": f"c{i}"} for i in range(100, 105)]
    r = write_arrow(base, to_arrow(b3), "insert_overwrite", c); model.apply("insert_overwrite", b3)
    assert r.action == "replacecommit" and r.replaced_file_groups >= 1
    assert actual(read_table(base)) == model.expected()
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    b4 = [{"id": i, "ts": 3, "p": "b", "v": f"d{i}"} for i in range(200, 203)]
    write_arrow(base, to_arrow(b4), "insert_overwrite_table", c); model.apply("insert_overwrite_table", b4)
    assert actual(read_table(base)) == model.expected()
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_small_files_are_filled_then_new_groups(tmp_path):
    base = str(tmp_path / "t")
    c = conf(partitioned=False, **{"hoodie.copyonwrite.insert.auto.split": "false",
                                   "hoodie.copyonwrite.insert.split.size": "25"})
    write_arrow(base, to_arrow([{"id": i, "ts": 1, "p": "x", "v": "v"} for i in range(10)]), "insert", c, table_name="t")
    first = next((tmp_path / "t").glob("*.parquet")).stat().st_size  # ~430 KB: the bloom filter dominates
    c.update({"hoodie.parquet.small.file.limit": str(first + 1),
              "hoodie.parquet.max.file.size": str(first + 64 * 30)})
    r = write_arrow(base, to_arrow([{"id": i, "ts": 1, "p": "x", "v": "v"} for i in range(10, 100)]), "insert", c)
    md = json.loads(HoodieTable.load(base).timeline.read_details(r.instant))
    stats = md["partitionToWriteStats"][""]
    merged = [s for s in stats if s["prevCommit"] != "null"]
    assert len(merged) == 1 and merged[0]["numInserts"] == 30 and merged[0]["numWrites"] == 40
    assert sorted(s["numInserts"] for s in stats if s["prevCommit"] == "null") == [10, 25, 25]
    assert len(read_table(base)) == 100


def test_ordering_field_keeps_newer_stored_record(tmp_path):
    base = str(tmp_path / "t")
    c = conf(partitioned=False, **{"hoodie.payload.ordering.field": "ts"})
    write_arrow(base, to_arrow([{"id": 1, "ts": 5, "p": "x", "v": "new"}]), "upsert", c, table_name="t")
    write_arrow(base, to_arrow([{"id": 1, "ts": 3, "p": "x", "v": "old"}]), "upsert", c)
    assert read_table(base).column("v").to_pylist() == ["new"]
    c2 = conf(partitioned=False)
    write_arrow(base, to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "latest"}]), "upsert", c2)
    if current_version() < 8:
        # version 6: without a payload ordering field the latest write wins (OverwriteWithLatestAvroPayload)
        assert read_table(base).column("v").to_pylist() == ["latest"]
        return
    # Hudi 1.x: the merge mode is the table's, fixed when it was created with ordering field ts
    # (EVENT_TIME_ORDERING); a write without payload settings still loses to the stored ts=5
    props = HoodieTable.load(base).config
    assert (props.record_merge_mode, props.ordering_fields) == ("EVENT_TIME_ORDERING", ["ts"])
    assert read_table(base).column("v").to_pylist() == ["new"]
    # the latest write wins on a table created with COMMIT_TIME_ORDERING
    base2 = str(tmp_path / "commit_time")
    c3 = conf(partitioned=False, **{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    write_arrow(base2, to_arrow([{"id": 1, "ts": 5, "p": "x", "v": "new"}]), "upsert", c3, table_name="t")
    write_arrow(base2, to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "latest"}]), "upsert", c3)
    assert HoodieTable.load(base2).config.record_merge_mode == "COMMIT_TIME_ORDERING"
    assert read_table(base2).column("v").to_pylist() == ["latest"]
    assert [r["v"] for r in hudi_rs_rows(base2)] == ["latest"]


def test_soft_delete_column(tmp_path):
    base = str(tmp_path / "t")
    c = conf(partitioned=False)
    write_arrow(base, to_arrow([{"id": i, "ts": 1, "p": "x", "v": "v"} for i in range(3)]), "upsert", c, table_name="t")
    t = to_arrow([{"id": 1, "ts": 2, "p": "x", "v": "gone"}]).append_column("_hoodie_is_deleted", pa.array([True]))
    write_arrow(base, t, "upsert", c)
    assert sorted(read_table(base).column("id").to_pylist()) == [0, 2]


def test_global_index_moves_record_between_partitions(tmp_path):
    base = str(tmp_path / "t")
    c = conf(index="GLOBAL_SIMPLE")
    write_arrow(base, to_arrow([{"id": 1, "ts": 1, "p": "a", "v": "v"}]), "upsert", c, table_name="t")
    write_arrow(base, to_arrow([{"id": 1, "ts": 2, "p": "b", "v": "w"}]), "upsert", c)
    assert actual(read_table(base)) == [(1, "b", 2, "w")]
    c2 = conf(index="GLOBAL_SIMPLE", **{"hoodie.simple.index.update.partition.path": "false"})
    write_arrow(base, to_arrow([{"id": 1, "ts": 3, "p": "c", "v": "z"}]), "upsert", c2)
    rows = read_table(base).select(["_hoodie_partition_path", "v"]).to_pylist()
    assert rows == [{"_hoodie_partition_path": "b", "v": "z"}]


def test_footer_and_meta_columns(tmp_path):
    base = str(tmp_path / "t")
    r = write_arrow(base, to_arrow([{"id": i, "ts": 1, "p": "a", "v": "v"} for i in (5, 3, 9)]), "upsert", conf(), table_name="t")
    f = next((tmp_path / "t" / "a").glob("*.parquet"))
    md = pq.read_metadata(f).metadata
    assert md[b"hoodie_min_record_key"] == b"3" and md[b"hoodie_max_record_key"] == b"9"
    assert md[b"hoodie_bloom_filter_type_code"] == b"DYNAMIC_V0" and md[b"writer.model.name"] == b"avro"
    avro = json.loads(md[b"parquet.avro.schema"])
    assert [x["name"] for x in avro["fields"]][:5] == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"]
    assert avro["name"] == "t_record" and avro["namespace"] == "hoodie.t"
    t = pq.read_table(f)
    assert t.column_names[:5] == [x["name"] for x in avro["fields"]][:5]
    assert set(t.column("_hoodie_commit_time").to_pylist()) == {r.instant}
    assert all(s.startswith(r.instant + "_") for s in t.column("_hoodie_commit_seqno").to_pylist())
    assert set(t.column("_hoodie_file_name").to_pylist()) == {f.name}
    meta = json.loads(HoodieTable.load(base).timeline.read_details(r.instant))
    assert meta["operationType"] == "UPSERT" and json.loads(meta["extraMetadata"]["schema"])["name"] == "t_record"
    assert (tmp_path / "t" / "a" / ".hoodie_partition_metadata").exists()


def test_schema_evolution(tmp_path):
    base = str(tmp_path / "t")
    c = conf(partitioned=False)
    write_arrow(base, to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "a"}]), "upsert", c, table_name="t")
    added = to_arrow([{"id": 2, "ts": 1, "p": "x", "v": "b"}]).append_column("extra", pa.array([7], pa.int32()))
    write_arrow(base, added, "upsert", c)
    missing = to_arrow([{"id": 3, "ts": 1, "p": "x", "v": "c"}]).drop_columns(["v"])
    write_arrow(base, missing, "upsert", {**c, "hoodie.write.set.null.for.missing.columns": "true"})
    rows = sorted(read_table(base).select(["id", "v", "extra"]).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "v": "a", "extra": None}, {"id": 2, "v": "b", "extra": 7}, {"id": 3, "v": None, "extra": None}]
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    before = meta_files(tmp_path / "t")
    bad = pa.table({"id": [4], "ts": [1], "p": ["x"], "v": [1.5]})
    with pytest.raises(HoodieSchemaError):
        write_arrow(base, bad, "upsert", c)
    assert meta_files(tmp_path / "t") == before


def test_bad_input_leaves_table_unchanged(tmp_path):
    base = str(tmp_path / "t")
    c = conf(partitioned=False)
    write_arrow(base, to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "a"}]), "upsert", c, table_name="t")
    before = meta_files(tmp_path / "t")
    with pytest.raises(HoodieKeyError):
        write_arrow(base, pa.table({"id": pa.array([None], pa.int64()), "ts": [1], "p": ["x"], "v": ["z"]}), "upsert", c)
    with pytest.raises(HoodieError, match="Record key field"):
        write_arrow(base, pa.table({"ts": [1], "p": ["x"], "v": ["z"]}), "upsert", c)
    with pytest.raises(HoodieError, match="Precombine"):
        write_arrow(base, pa.table({"id": [1], "p": ["x"], "v": ["z"]}), "upsert", c)
    with pytest.raises(HoodieError, match="table type"):
        write_arrow(str(tmp_path / "u"), to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "a"}]), "upsert",
                    {**c, "hoodie.table.type": "BOGUS"}, table_name="u")
    assert meta_files(tmp_path / "t") == before
    assert not (tmp_path / "u" / ".hoodie" / "hoodie.properties").exists()


def test_unknown_keys_reported(tmp_path):
    r = write_arrow(str(tmp_path / "t"), to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "a"}]), "upsert",
                    {**conf(), "hoodie.cleaner.commits.retaind": "3"}, table_name="t")
    assert r.unknown_keys == ["hoodie.cleaner.commits.retaind"]


def test_commit_callback_http(tmp_path):
    got = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.headers.get("HUDI-CALLBACK-KEY"), json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):  # quiet
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        c = {**conf(), "hoodie.write.commit.callback.on": "true",
             "hoodie.write.commit.callback.http.url": f"http://127.0.0.1:{srv.server_port}/cb",
             "hoodie.write.commit.callback.http.api.key": "sekret",
             "hoodie.write.commit.callback.http.timeout.seconds": "5"}
        r = write_arrow(str(tmp_path / "t"), to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "a"}]), "upsert", c, table_name="t")
    finally:
        srv.shutdown()
    assert got and got[0][0] == "sekret"
    assert got[0][1]["commitTime"] == r.instant and got[0][1]["tableName"] == "t"


def test_mor_log_rollover_and_blocks(tmp_path):
    base = str(tmp_path / "t")
    c = conf("MERGE_ON_READ", partitioned=False, **{"hoodie.logfile.max.size": "600"})
    model = TableModel(False)
    rng = random.Random(3)
    for step in range(4):
        batch = random_batch(rng, 20, 15, step * 10, ["x"], {})
        write_arrow(base, to_arrow(batch), "upsert", c, table_name="t")
        model.apply("upsert", batch)
    logs = sorted(p.name for p in (tmp_path / "t").glob(".*.log.*"))
    if current_version() < 8:
        assert len({n.split(".log.")[1].split("_")[0] for n in logs}) >= 2  # rolled over to new versions
    else:
        # Hudi 1.x never appends to an existing log: each delta commit writes its own file,
        # named by that commit (version 1: one write's blocks fit), so a group's later writes
        # land in new files whatever hoodie.logfile.max.size says
        delta_commits = {i.timestamp for i in HoodieTable.load(base).timeline.completed()
                         if i.action == "deltacommit"}
        named = [(n[1:].split("_")[0], n.split("_")[1].split(".log.")[0], n.split(".log.")[1].split("_")[0])
                 for n in logs]
        assert all(ts in delta_commits and version == "1" for _fid, ts, version in named), logs
        by_group: dict[str, set[str]] = {}
        for fid, ts, _version in named:
            by_group.setdefault(fid, set()).add(ts)
        assert max(len(v) for v in by_group.values()) >= 2
    assert actual(read_table(base)) == model.expected()
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_new_table_config_has_no_empty_keys_as_hudi_writes_it(tmp_path):
    """Real Hudi 0.14 leaves hoodie.table.partition.fields out on a non-partitioned table."""
    from airflow_hoodie.table.properties import load_java_properties

    base = tmp_path / "t"
    write_arrow(str(base), to_arrow([{"id": 1, "ts": 1, "p": "x", "v": "a"}]), "upsert", conf(partitioned=False),
                table_name="t")
    props = load_java_properties((base / ".hoodie" / "hoodie.properties").read_text("latin-1"))
    assert "hoodie.table.partition.fields" not in props
    assert [k for k, v in props.items() if v == ""] == []
