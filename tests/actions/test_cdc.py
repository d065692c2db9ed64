"""CDC tables (hoodie.table.cdc.enabled=true): the .cdc logs of COW merges and the CDC query,
against a Python model of the changes, on table versions 6 and 9; refusals; table properties.

The .cdc files are decoded here by a small test-only reader of Hudi's log format (magic,
block framing, header, Avro records) so the check does not rest on the log reader it tests."""

from __future__ import annotations

import io
import json
import os
import struct

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.cdc_block import is_cdc_log_name
from airflow_hoodie.table.read import read_table
from tests.actions.table_versions import (  # noqa: F401
    current_version,
    table_version,
    version_settings,
)
from tests.table.normalize import hudi_rs_rows

pytestmark = pytest.mark.usefixtures("table_version")

DATA_COLUMNS = ("id", "ts", "p", "v")


def conf(**extra: str) -> dict[str, str]:
    c = {
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.table.cdc.enabled": "true",
        # small files: a batch's inserts go partly into existing groups, partly into new ones
        "hoodie.copyonwrite.record.size.estimate": "64",
        "hoodie.parquet.max.file.size": str(64 * 12),
        "hoodie.parquet.small.file.limit": str(64 * 8),
    }
    c.update(version_settings())
    c.update(extra)
    return c


def rows_table(rows: list[dict]) -> pa.Table:
    return pa.table({"id": pa.array([r["id"] for r in rows], pa.int64()),
                     "ts": pa.array([r["ts"] for r in rows], pa.int64()),
                     "p": [r["p"] for r in rows], "v": [r["v"] for r in rows]})


class ChangeModel:
    """The table as a dict of rows, and the change list each write makes of it."""

    def __init__(self) -> None:
        self.rows: dict[int, dict] = {}

    def upsert(self, batch: list[dict], instant: str) -> list[tuple]:
        changes = []
        for r in batch:
            old = self.rows.get(r["id"])
            changes.append(("u", instant, old, r) if old else ("i", instant, None, r))
            self.rows[r["id"]] = r
        return changes

    def delete(self, keys: list[int], instant: str) -> list[tuple]:
        return [("d", instant, self.rows.pop(k), None) for k in keys if k in self.rows]


def as_json(image: dict | None) -> str | None:
    return None if image is None else json.dumps({c: image[c] for c in DATA_COLUMNS}, separators=(",", ":"))


def normalized(changes: list[tuple]) -> list[tuple]:
    return sorted((op, ts, as_json(b), as_json(a)) for op, ts, b, a in changes)


# ------------------------------------------------------------------ test-only log decoder
def decode_cdc_file(path: str) -> list[dict]:
    """Records of every block of a Hudi log file (CDC_DATA blocks, type 6)."""
    return [r for _schema, records in decode_cdc_blocks(path) for r in records]


def decode_cdc_blocks(path: str) -> list[tuple[dict, list[dict]]]:
    """Every block of a Hudi log file: its writer schema (the SCHEMA header, as JSON) and its
    records (CDC_DATA blocks, type 6)."""
    with open(path, "rb") as f:
        data = f.read()
    pos, blocks = 0, []
    while pos < len(data):
        assert data[pos:pos + 6] == b"#HUDI#", "log block magic"
        (size,) = struct.unpack(">q", data[pos + 6:pos + 14])
        body = data[pos + 14:pos + 14 + size]
        _version, block_type = struct.unpack(">ii", body[:8])
        assert block_type == 6, "a CDC_DATA block"
        headers, at = _metadata(body, 8)
        (content_len,) = struct.unpack(">q", body[at:at + 8])
        content = body[at + 8:at + 8 + content_len]
        schema_json = json.loads(headers[2])
        schema = fastavro.parse_schema(schema_json)
        _content_version, count = struct.unpack(">ii", content[:8])
        cur, records = 8, []
        for _ in range(count):
            (n,) = struct.unpack(">i", content[cur:cur + 4])
            records.append(fastavro.schemaless_reader(io.BytesIO(content[cur + 4:cur + 4 + n]), schema))
            cur += 4 + n
        blocks.append((schema_json, records))
        pos += 14 + size
    return blocks


def _metadata(buf: bytes, at: int) -> tuple[dict[int, str], int]:
    (count,) = struct.unpack(">i", buf[at:at + 4])
    at += 4
    out = {}
    for _ in range(count):
        key, n = struct.unpack(">ii", buf[at:at + 8])
        out[key] = buf[at + 8:at + 8 + n].decode()
        at += 8 + n
    return out, at


def logged_changes(base: str, instant: str) -> list[tuple]:
    """The commit's changes as its .cdc logs hold them, plus the inserts of the new file groups
    it wrote without a log (read from their base files, as Hudi infers them)."""
    meta = HoodieTable.load(base).timeline.commit_metadata(instant)
    changes = []
    for _partition, stat in meta.iter_write_stats():
        if stat.cdc_stats:
            for rel, size in stat.cdc_stats.items():
                assert os.path.getsize(os.path.join(base, rel)) == size
                assert rel.endswith("-cdc" if current_version() == 6 else ".cdc")
                changes += [(r["op"], r["ts_ms"], r["before"], r["after"]) for r in decode_cdc_file(os.path.join(base, rel))]
        else:
            assert stat.num_update_writes == 0 and stat.num_deletes == 0 and stat.num_inserts == stat.num_writes
            rows = pq.read_table(os.path.join(base, stat.path)).select(list(DATA_COLUMNS)).to_pylist()
            changes += [("i", instant, None, r) for r in rows]
    return changes


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_cdc_logs_and_query_match_model(tmp_path, table_type):
    """COW: every merged group's .cdc log holds exactly its changes. MOR: the delta commits' log
    appends carry no .cdc log (Hudi infers their changes from the slice, LOG_FILE). Both: the CDC
    query returns the model's change list."""
    base, c, cow = str(tmp_path / "t"), conf(**{"hoodie.table.type": table_type}), table_type == "COPY_ON_WRITE"
    model, expected = ChangeModel(), []
    first = [{"id": i, "ts": 1, "p": "a" if i % 2 else "b", "v": f"v{i}"} for i in range(10)]
    r = write_arrow(base, rows_table(first), "upsert", c, table_name="t")
    expected += (step := model.upsert(first, r.instant))
    assert normalized(logged_changes(base, r.instant)) == normalized(step)
    # updates, inserts into the existing (small) groups and, past their size, into new groups
    second = [{"id": i, "ts": 2, "p": "a" if i % 2 else "b", "v": f"w{i}"} for i in [1, 2, 3, *range(10, 30)]]
    r = write_arrow(base, rows_table(second), "upsert", c, table_name="t")
    expected += (step := model.upsert(second, r.instant))
    stats = HoodieTable.load(base).timeline.commit_metadata(r.instant).write_stats
    if cow:
        assert any(s.cdc_stats for s in stats) and any(not s.cdc_stats for s in stats), "merged and new groups"
        assert normalized(logged_changes(base, r.instant)) == normalized(step)
    else:
        logs = [s for s in stats if ".log." in (s.path or "")]
        assert logs and all(s.log_files and not s.cdc_stats for s in logs)
    gone = [2, 5, 11]
    dels = rows_table([{**model.rows[k], "ts": 3} for k in gone])
    r = write_arrow(base, dels, "delete", c, table_name="t")
    expected += (step := model.delete(gone, r.instant))
    if cow:
        assert normalized(logged_changes(base, r.instant)) == normalized(step)

    got = read_table(base, query_type="cdc")
    assert got.column_names == ["op", "ts_ms", "before", "after"]
    assert sorted(tuple(x.values()) for x in got.to_pylist()) == normalized(expected)
    # the .cdc logs beside the data do not disturb another reader's snapshot (hudi-rs)
    rs = hudi_rs_rows(base, columns=list(DATA_COLUMNS))
    assert sorted((r["id"], r["v"]) for r in rs) == sorted((r["id"], r["v"]) for r in model.rows.values())
    # a window holds only its commits
    window = read_table(base, query_type="cdc", start=r.instant if current_version() == 6 else None)
    if current_version() == 6:
        assert window.num_rows == 0


def test_cdc_properties_stored_at_creation(tmp_path):
    base = str(tmp_path / "t")
    write_arrow(base, rows_table([{"id": 1, "ts": 1, "p": "a", "v": "x"}]), "upsert", conf(), table_name="t")
    props = HoodieTable.load(base).config
    assert props["hoodie.table.cdc.enabled"] == "true"
    mode = props["hoodie.table.cdc.supplemental.logging.mode"]
    assert mode == ("data_before_after" if current_version() == 6 else "DATA_BEFORE_AFTER")


def test_no_cdc_logs_without_the_property(tmp_path):
    base = str(tmp_path / "t")
    c = conf()
    del c["hoodie.table.cdc.enabled"]
    for ts in (1, 2):
        write_arrow(base, rows_table([{"id": 1, "ts": ts, "p": "a", "v": "x"}]), "upsert", c, table_name="t")
    assert not [f for _, _, fs in os.walk(base) for f in fs if is_cdc_log_name(f)]
    with pytest.raises(HoodieConfigError, match="not a CDC table"):
        read_table(base, query_type="cdc")
    with pytest.raises(HoodieConfigError, match="hoodie.table.cdc.enabled"):
        write_arrow(base, rows_table([{"id": 1, "ts": 3, "p": "a", "v": "x"}]), "upsert", conf(), table_name="t")


def _timeline_files(base: str) -> list[str]:
    return sorted(os.listdir(os.path.join(base, ".hoodie"))) if os.path.isdir(os.path.join(base, ".hoodie")) else []


def test_cdc_logs_listed_by_metadata_table_and_cleaned_with_their_slice(tmp_path):
    """Hudi lists a merge's .cdc log in the metadata table's files partition and keeps it in the
    file slice of the commit that wrote it, so the cleaner removes it with that slice."""
    from airflow_hoodie.actions import clean as cl
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.metadata_table.files_listing import load_files_listing
    from tests.table.table_files import storage_listing

    base = str(tmp_path / "t")
    for ts in range(1, 6):
        write_arrow(base, rows_table([{"id": 1, "ts": ts, "p": "a", "v": "x"}]), "upsert", conf(), table_name="t")
    table = HoodieTable.load(base)
    assert load_files_listing(table.storage, table.base_path, table.timeline).files == storage_listing(base)
    cdc_logs = [n for n in os.listdir(os.path.join(base, "a")) if is_cdc_log_name(n)]
    assert len(cdc_logs) == 4
    cl.run_clean(HoodieTable.load(base), HoodieConfig({cl.COMMITS_RETAINED: "1"}), LocalExecutor())
    left = [n for n in os.listdir(os.path.join(base, "a")) if is_cdc_log_name(n)]
    assert 0 < len(left) < len(cdc_logs)
    table = HoodieTable.load(base)
    assert load_files_listing(table.storage, table.base_path, table.timeline).files == storage_listing(base)
    assert read_table(base).num_rows == 1


@pytest.mark.parametrize("index_type", ["SIMPLE", "BUCKET"])
def test_mor_compaction_logs_its_merge_only_with_a_pure_log_index(tmp_path, index_type):
    """Hudi compacts a CDC table through its merge handle with change log only when the index
    yields pure log files (HoodieMergeHandleFactory: isCDCEnabled && isYieldingPureLogForMor, i.e.
    BUCKET or FLINK_STATE): then the compaction's stats name .cdc logs of what it merged (updates
    of base rows, deletes); with any other index (SIMPLE, Hudi's default) it writes none. A CDC
    query leaves the compaction out either way (COMPACT is no data change): the changes stay the
    delta commits'."""
    from airflow_hoodie.actions import compaction as cp
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.config import HoodieConfig

    index = {"hoodie.index.type": index_type}
    if index_type == "BUCKET":
        index["hoodie.bucket.index.num.buckets"] = "1"
    base, c = str(tmp_path / "t"), conf(**{"hoodie.table.type": "MERGE_ON_READ", **index})
    model, expected = ChangeModel(), []
    first = [{"id": i, "ts": 1, "p": "a", "v": f"v{i}"} for i in range(4)]
    r = write_arrow(base, rows_table(first), "upsert", c, table_name="t")
    expected += model.upsert(first, r.instant)
    second = [{"id": 1, "ts": 2, "p": "a", "v": "w1"}]
    r = write_arrow(base, rows_table(second), "upsert", c, table_name="t")
    expected += model.upsert(second, r.instant)
    r = write_arrow(base, rows_table([{**model.rows[2], "ts": 3}]), "delete", c, table_name="t")
    expected += model.delete([2], r.instant)
    sched = cp.schedule_compaction(HoodieTable.load(base), HoodieConfig(index), force=True)
    cp.execute_compaction(HoodieTable.load(base), sched.instant.timestamp, LocalExecutor(), HoodieConfig(index))
    meta = HoodieTable.load(base).timeline.commit_metadata(sched.instant.timestamp)
    assert meta.write_stats, "the compaction rewrote the group"
    logged = [(x["op"], x["before"], x["after"]) for s in meta.write_stats for rel in (s.cdc_stats or {})
              for x in decode_cdc_file(os.path.join(base, rel))]
    if index_type == "BUCKET":
        assert sorted(logged, key=str) == sorted([("u", {"id": 1, "ts": 1, "p": "a", "v": "v1"}, model.rows[1]),
                                                 ("d", {"id": 2, "ts": 1, "p": "a", "v": "v2"}, None)], key=str)
    else:
        assert not any(s.cdc_stats for s in meta.write_stats)
        assert not [n for _d, _s, files in os.walk(base) for n in files if is_cdc_log_name(n)
                    and sched.instant.timestamp in n]
    got = read_table(base, query_type="cdc")
    assert sorted(tuple(x.values()) for x in got.to_pylist()) == normalized(expected)


def test_rollback_of_a_cdc_write_deletes_its_cdc_logs(tmp_path):
    """A .cdc log is a whole file of the instant that wrote it: rolling the instant back (failed
    or completed) deletes it, never appends a rollback block to it."""
    from airflow_hoodie.actions import rollback as rb
    from airflow_hoodie.config import HoodieConfig

    base = str(tmp_path / "t")
    write_arrow(base, rows_table([{"id": 1, "ts": 1, "p": "a", "v": "x"}]), "upsert", conf(), table_name="t")
    r = write_arrow(base, rows_table([{"id": 1, "ts": 2, "p": "a", "v": "y"}]), "upsert", conf(), table_name="t")
    assert [n for n in os.listdir(os.path.join(base, "a")) if is_cdc_log_name(n)]
    rb.rollback_latest_or(HoodieTable.load(base), r.instant, HoodieConfig({}))
    assert not [n for n in os.listdir(os.path.join(base, "a")) if is_cdc_log_name(n)]
    assert read_table(base).column("v").to_pylist() == ["x"]
    assert read_table(base, query_type="cdc").num_rows == 1
