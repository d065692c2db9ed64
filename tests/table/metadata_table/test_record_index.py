"""The metadata table's record index kept exact (Hudi 0.14's record-level index): after
every write, rollback and service, each live key maps to the file group that holds it and
deleted keys are gone; our records are laid out as the ones real Hudi wrote."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import fastavro
import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.actions.metadata_table.record_index_writer import file_group_count
from airflow_hoodie.table.metadata_table.record_index import (
    file_group_index,
    index_info,
    location_of,
    read_record_index,
)
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import batch, table_config

ENABLE = {"hoodie.metadata.record.index.enable": "true"}
REAL = "tables/cow/v9_txns_simple_meta"


def truth(base: Path) -> dict[str, tuple[str, str]]:
    """key -> (partition, file id) as the snapshot read finds them."""
    rows = read_table(str(base))
    names = rows.column("_hoodie_file_name").to_pylist()
    return {k: (p, n.split("_")[0].lstrip(".")) for k, p, n in zip(rows.column("_hoodie_record_key").to_pylist(),
                                                                     rows.column("_hoodie_partition_path").to_pylist(),
                                                                     names)}


def assert_index_exact(base: Path, what: str) -> None:
    assert read_record_index(HoodieTable.load(str(base))) == truth(base), what


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_record_index_stays_exact_through_upserts_deletes_and_services(tmp_path, table_type):
    base = tmp_path / "t"
    cfg = table_config(table_type, **ENABLE)
    # built by the write that creates the table (under the lock, before its instant), as
    # Hudi's writer initializes an enabled partition: 00000000000000011, after files' 010
    write_arrow(str(base), batch(range(0, 8), 1), "upsert", cfg)
    assert (base / ".hoodie" / "metadata" / ".hoodie" / "00000000000000011.deltacommit").exists()
    write_arrow(str(base), batch(range(4, 12), 2), "upsert", cfg)
    table = HoodieTable.load(str(base))
    assert table.config.get("hoodie.table.metadata.partitions") == "files,record_index"
    groups = sorted(p.name for p in (base / ".hoodie" / "metadata" / "record_index").glob("record-index-*.hfile"))
    assert [g.split("_")[0] for g in groups] == [f"record-index-{i:04d}-0" for i in range(10)]
    assert_index_exact(base, "upsert")
    write_arrow(str(base), batch(range(10, 16), 3), "upsert", cfg)
    assert_index_exact(base, "upsert with inserts")
    write_arrow(str(base), batch(range(0, 3), 4), "delete", cfg)
    gone = read_record_index(HoodieTable.load(str(base)))
    assert not {"k0000", "k0001", "k0002"} & set(gone)
    assert_index_exact(base, "delete")
    last = write_arrow(str(base), batch(range(30, 34), 5), "upsert", cfg).instant
    assert "k0030" in read_record_index(HoodieTable.load(str(base)))
    rollback_latest_or(HoodieTable.load(str(base)), last)
    assert_index_exact(base, "rollback of an insert")
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig({}), force=True)
        c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor())
        assert_index_exact(base, "compaction")
    cu.run_clustering(HoodieTable.load(str(base)), HoodieConfig({}), LocalExecutor())
    assert_index_exact(base, "clustering moves every key to a new file group")
    write_arrow(str(base), batch(range(12, 14), 6), "delete", cfg)
    assert_index_exact(base, "delete after clustering")


def test_record_index_tagging_gives_the_table_global_simple_gives(tmp_path, monkeypatch):
    from airflow_hoodie.actions import index as ix

    tables = {}
    for index_type in ("GLOBAL_SIMPLE", "RECORD_INDEX"):
        base = tmp_path / index_type
        # a changed partition moves the record (delete + insert) under both (Hudi's defaults differ:
        # true for GLOBAL_SIMPLE, false for RECORD_INDEX)
        cfg = table_config("MERGE_ON_READ", **ENABLE, **{"hoodie.index.type": index_type,
                                                         "hoodie.simple.index.update.partition.path": "true",
                                                         "hoodie.record.index.update.partition.path": "true"})
        write_arrow(str(base), batch(range(0, 10), 1), "upsert", cfg)
        write_arrow(str(base), batch(range(5, 15), 2), "upsert", cfg)  # builds the index, then tags through it
        if index_type == "RECORD_INDEX":
            # from here on no data file may be probed for keys: the index answers
            def no_probe(*args, **kwargs):
                raise AssertionError("a data file was scanned for keys")
            monkeypatch.setattr(ix, "file_keys", no_probe)
        moved = batch(range(12, 18), 3)
        moved = moved.set_column(1, "p", [["p9"] * moved.num_rows])
        write_arrow(str(base), moved, "upsert", cfg)
        write_arrow(str(base), batch(range(0, 4), 4), "delete", cfg)
        monkeypatch.undo()
        rows = read_table(str(base)).sort_by("id")
        tables[index_type] = rows.select(["_hoodie_record_key", "_hoodie_partition_path", "id", "p", "v"])
        assert_index_exact(base, index_type)
    assert tables["RECORD_INDEX"] == tables["GLOBAL_SIMPLE"]
    assert tables["RECORD_INDEX"].num_rows == 14
    assert tables["RECORD_INDEX"].filter(pc.equal(tables["RECORD_INDEX"].column("id"), "k0012")) \
        .column("_hoodie_partition_path").to_pylist() == ["p9"]


def test_keys_hash_and_locations_encode_as_in_a_real_hudi_record_index(conformance_next, tmp_path):
    """Hudi's own record index (a v9 table; the record layout is 0.14's plus one field):
    every key sits in the file group its hash names, and its location decodes to a data file
    group of the table that holds the key."""
    base = tmp_path / "real"
    shutil.copytree(conformance_next / REAL, base)
    files = sorted((base / ".hoodie" / "metadata" / "record_index").glob("record-index-*.hfile"))
    count = len(files)
    seen = {}
    for path in files:
        index = int(path.name.split("-")[2])
        hfile = HFile(path.read_bytes(), str(path))
        schema = fastavro.parse_schema(json.loads(hfile.schema_json))
        for key, value in hfile.records():
            rec = fastavro.schemaless_reader(io.BytesIO(value), schema)
            assert file_group_index(key.decode(), count) == index
            info = rec["recordIndexMetadata"]
            seen[key.decode()] = location_of(info)
            ours = index_info(*location_of(info), info["instantTime"])
            assert {k: v for k, v in info.items() if k in ours} == ours
    assert seen
    data = {p.name.split("_")[0]: p.parent.name for p in base.glob("region=*/*.parquet")}
    for part, fid in seen.values():
        assert data.get(fid) == part


def test_hashing_and_sizing_follow_hudi():
    # Java: "TXN-008".hashCode() % 10 == 1; Integer.MIN_VALUE's hash ("polygenelubricants")
    assert file_group_index("TXN-008", 10) == 1
    assert file_group_index("polygenelubricants", 10) == 8
    assert file_group_index("é😀", 7) == abs(((233 * 31 + 0xD83D) * 31 + 0xDE00) % 7)
    assert file_group_count(1_000, 10, 10000, 1 << 30, 2.0) == 10
    assert file_group_count(50_000_000, 10, 10000, 1 << 30, 2.0) == 10  # 5 wanted, at least the minimum
    assert file_group_count(200_000_000, 10, 10000, 1 << 30, 2.0) == 18
    assert location_of(index_info("p", "not-a-uuid", 1)) == ("p", "not-a-uuid")


def test_record_bytes_are_the_whole_records_encoding():
    from airflow_hoodie.table.metadata_table.metadata_record import encode_record
    from airflow_hoodie.table.metadata_table.record_index import record_index_records

    locations = {"a": ("p0", "3940a88a-becc-42a6-b177-6b3eb822870c-0", 1795645340198), "b": ("", "not-a-uuid", 5),
                 "c": ("x", "3940a88a-becc-42a6-b177-6b3eb822870c", -1)}
    for name in (None, "record-index-0001-0_0-0-0_20240101000000000001.hfile"):
        ours = dict(record_index_records(locations, name))
        for key, (part, fid, millis) in locations.items():
            whole = {"key": "", "type": 5, "recordIndexMetadata": index_info(part, fid, millis)}
            if name:
                whole["_hoodie_file_name"] = name
            assert ours[key.encode()] == encode_record(whole)


def test_a_record_index_still_being_built_stops_the_job(tmp_path):
    base = tmp_path / "t"
    cfg = table_config("COPY_ON_WRITE")
    write_arrow(str(base), batch(range(0, 4), 1), "upsert", cfg)
    HoodieTable.load(str(base)).update_config({"hoodie.table.metadata.partitions.inflight": "record_index"})
    with pytest.raises(HoodieNotSupportedError, match="record_index.*hoodie.metadata.enable=false"):
        write_arrow(str(base), batch(range(4, 6), 2), "upsert", cfg)


def test_a_lookup_reads_only_the_hfile_blocks_its_keys_are_in(conformance_next):
    from airflow_hoodie.table.metadata_table import hfile_lookup
    from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile

    rows = [(f"k{i:06d}".encode(), bytes(40)) for i in range(5000)]
    hfile = HFile(write_hfile(rows, '{"type": "string"}', block_size=2048))
    read = []
    real_block = HFile._block
    hfile._block = lambda offset: read.append(offset) or real_block(hfile, offset)
    wanted = [b"k000000", b"k002500", b"k004999", b"k0025005", b"a", b"z"]
    assert dict(hfile_lookup.get_records(hfile, wanted)) == {k: bytes(40) for k in wanted[:3]}
    assert len(read) == 1 + 3  # the root index, then the three blocks holding a wanted key
    for path in sorted((conformance_next / REAL).glob(".hoodie/metadata/*/*.hfile")):
        real = HFile(path.read_bytes(), str(path))
        everything = dict(real.records())
        assert dict(hfile_lookup.get_records(real, [*everything, b"missing"])) == everything


def test_the_record_index_stays_exact_past_metadata_compaction_archival_and_restore(tmp_path):
    from airflow_hoodie.actions import archive as ar
    from airflow_hoodie.actions import clean as cl
    from airflow_hoodie.actions import restore as rs
    from airflow_hoodie.actions import savepoint as sp

    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ", **ENABLE, **{"hoodie.index.type": "RECORD_INDEX"})
    cfg.pop("hoodie.parquet.small.file.limit")  # inserts also go into small file groups
    for i in range(16):
        write_arrow(str(base), batch(range(i * 3, i * 3 + 6), i + 1), "delete" if i % 4 == 3 else "upsert", cfg)
        if i:
            assert_index_exact(base, f"write {i}")
    assert list((base / ".hoodie" / "metadata" / ".hoodie").glob("*001.commit")), "no metadata-table compaction"
    ar.run_archive(HoodieTable.load(str(base)), HoodieConfig({ar.MIN_COMMITS: "2", ar.MAX_COMMITS: "3",
                                                              cl.COMMITS_RETAINED: "1"}))
    assert len(HoodieTable.load(str(base)).timeline.completed_commits().instants) < 16
    assert_index_exact(base, "archival")
    kept = write_arrow(str(base), batch(range(100, 104), 20), "upsert", cfg).instant
    sp.create_savepoint(HoodieTable.load(str(base)), kept)
    write_arrow(str(base), batch(range(104, 110), 21), "upsert", cfg)
    write_arrow(str(base), batch(range(100, 102), 22), "delete", cfg)
    rs.restore_to(HoodieTable.load(str(base)), kept)
    index = read_record_index(HoodieTable.load(str(base)))
    assert {"k0100", "k0101"} <= set(index) and "k0105" not in index
    assert_index_exact(base, "restore")


def test_a_rollback_keeps_the_record_index_exact_when_its_records_were_compacted(tmp_path):
    """The rolled-back delete's records were compacted into the metadata table's base files
    (by the delta commit of a clean after it), where no rollback block reaches them."""
    from airflow_hoodie.actions import clean as cl

    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ", **ENABLE, **{"hoodie.metadata.compact.max.delta.commits": "1"})
    write_arrow(str(base), batch(range(0, 8), 1), "upsert", cfg)
    write_arrow(str(base), batch(range(4, 12), 2), "upsert", cfg)
    c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig({}), force=True)
    c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor())
    deleted = write_arrow(str(base), batch(range(2, 4), 3), "delete", cfg).instant  # log blocks on the new bases
    cl.run_clean(HoodieTable.load(str(base)), HoodieConfig({**cfg, cl.POLICY: "KEEP_LATEST_FILE_VERSIONS",
                                                            cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert list((base / ".hoodie" / "metadata" / ".hoodie").glob(f"{deleted}001.commit"))
    assert not {"k0002", "k0003"} & set(read_record_index(HoodieTable.load(str(base))))
    rollback_latest_or(HoodieTable.load(str(base)), deleted, HoodieConfig(cfg))
    assert {"k0002", "k0003"} <= set(read_record_index(HoodieTable.load(str(base))))
    assert_index_exact(base, "rollback of a compacted delete")


def test_a_build_that_died_is_redone_by_the_next_write(tmp_path, monkeypatch):
    base = tmp_path / "t"
    cfg = table_config("COPY_ON_WRITE")
    write_arrow(str(base), batch(range(0, 8), 1), "upsert", cfg)
    real_update = HoodieTable.update_config

    def dies_before_listing(self, updates, deletes=()):
        if "record_index" in str(updates):
            raise RuntimeError("killed")
        return real_update(self, updates, deletes)
    monkeypatch.setattr(HoodieTable, "update_config", dies_before_listing)
    with pytest.raises(RuntimeError, match="killed"):
        write_arrow(str(base), batch(range(8, 10), 2), "upsert", {**cfg, **ENABLE})
    monkeypatch.undo()
    mdt_timeline = base / ".hoodie" / "metadata" / ".hoodie"
    died = [p.name.split(".")[0] for p in mdt_timeline.glob("*010.deltacommit.inflight") if len(p.name) > 40]
    assert died  # its delta commit completed, the partition was never listed
    assert HoodieTable.load(str(base)).config.get("hoodie.table.metadata.partitions") == "files"
    write_arrow(str(base), batch(range(8, 12), 3), "upsert", {**cfg, **ENABLE})
    # built again at the same time (the failed build's instant and files went first)
    assert HoodieTable.load(str(base)).config.get("hoodie.table.metadata.partitions") == "files,record_index"
    assert (mdt_timeline / f"{died[0]}.deltacommit").exists()
    assert not list(mdt_timeline.glob("*011.deltacommit*"))
    assert len(list((base / ".hoodie" / "metadata" / "record_index").glob("*.hfile"))) == 10
    assert_index_exact(base, "rebuilt")


def test_overwrites_drop_the_keys_of_the_file_groups_they_replace(tmp_path):
    base = tmp_path / "t"
    cfg = table_config("COPY_ON_WRITE", **ENABLE)
    write_arrow(str(base), batch(range(0, 12), 1), "upsert", cfg)
    write_arrow(str(base), batch([0, 2, 40], 2), "insert_overwrite", cfg)  # partition p0 now holds only these
    index = read_record_index(HoodieTable.load(str(base)))
    assert {"k0000", "k0002", "k0040"} <= set(index) and "k0004" not in index and "k0001" in index
    assert_index_exact(base, "insert_overwrite")
    write_arrow(str(base), batch([7], 3), "insert_overwrite_table", cfg)
    assert set(read_record_index(HoodieTable.load(str(base)))) == {"k0007"}
    assert_index_exact(base, "insert_overwrite_table")
