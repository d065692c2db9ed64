"""File system view on real Hudi tables and on synthetic edge cases."""

from __future__ import annotations

import json

from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

T1, T2, T3, T4, T5 = (f"2025010100000000{i}" for i in range(1, 6))


def test_conformance_latest_slices(conformance):
    t = HoodieTable.load(str(conformance / "tables/mor/v6_nonpartitioned_rollback"))
    v = t.file_system_view()
    assert v.partitions() == [""]
    (s,) = v.latest_file_slices()
    assert s.partition_path == "" and s.base_instant == "20250126040823628"
    assert s.base_file.file_name == "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_0-13-23_20250126040823628.parquet"
    assert [lf.version for lf in s.log_files] == [1, 2, 3]
    assert [lf.write_token for lf in s.log_files] == ["0-33-43", "1-0-1", "0-13-9"]
    assert v.latest_merged_file_slices() == [s]
    assert [b.file_name for b in v.latest_base_files()] == [s.base_file.file_name]


def test_conformance_cow_versions_and_as_of(conformance):
    t = HoodieTable.load(str(conformance / "tables/cow/v6_simplekeygen_nonhivestyle"))
    v = t.file_system_view()
    assert v.partitions() == ["10", "20", "30"]
    latest = {s.partition_path: s.base_instant for s in v.latest_file_slices()}
    assert latest == {"10": "20240418172804498", "20": "20240418172802262", "30": "20240418172804498"}
    old = {s.partition_path: s.base_instant for s in v.latest_file_slices(as_of="20240418172802262")}
    assert old == {"10": "20240418172802262", "20": "20240418172802262"}
    assert [b.partition_path for b in v.latest_base_files("10")] == ["10"]
    (g,) = v.file_groups("10")
    assert len(g.slices) == 2


def test_conformance_replacecommit_hides_groups(conformance):
    t = HoodieTable.load(str(conformance / "tables/cow/v6_simplekeygen_nonhivestyle_overwritetable"))
    v = t.file_system_view()
    assert v.replaced_file_groups() == {
        ("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"),
        ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0"),
        ("30", "d398fae1-c0e6-4098-8124-f55f7098bdba-0"),
    }
    assert [(s.partition_path, s.file_id) for s in v.latest_file_slices()] == [
        ("30", "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0")]
    before = v.latest_file_slices(as_of="20240707001302376")
    assert len(before) == 3 and v.replaced_file_groups(as_of="20240707001302376") == set()
    assert len(v.file_groups(include_replaced=True)) == 4
    assert v.pending_clustering_file_groups() == {}  # insert_overwrite plan has no clustering plan


def test_conformance_every_table(conformance):
    for kind in ("cow", "mor"):
        for tdir in sorted((conformance / "tables" / kind).iterdir()):
            t = HoodieTable.load(str(tdir))
            v = t.file_system_view()
            slices = v.latest_file_slices()
            if tdir.name == "v6_empty":
                assert slices == [] and v.partitions() == []
            else:
                assert slices and all(s.base_file is not None for s in slices)
                assert {s.partition_path for s in slices} <= set(v.partitions())


# --------------------------------------------------------------- synthetic tables
def _touch(path, data=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _commit(w, ts, action=Action.DELTA_COMMIT, content=b"{}", complete=True):
    inst = Instant(ts, action, State.REQUESTED)
    w.create_requested(inst)
    w.transition_to_inflight(inst)
    if complete:
        w.complete(inst, content)


def _mor(tmp_path):
    t = HoodieTable.create(str(tmp_path / "t"), {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ"})
    write_partition_metadata(t.storage, t.base_path, "p", T1)
    return t, TimelineWriter(t.storage, t.base_path), tmp_path / "t" / "p"


def test_failed_writes_invisible(tmp_path):
    t, w, p = _mor(tmp_path)
    _commit(w, T1)
    _touch(p / f"f1-0_0-1-1_{T1}.parquet")
    _touch(p / f".f1-0_{T1}.log.1_0-1-1")
    _commit(w, T2, complete=False)  # in flight: its new base file is invisible
    _touch(p / f"f2-0_0-1-1_{T2}.parquet")
    _touch(p / f".f3-0_{T2}.log.1_0-1-1")
    _touch(p / f".f1-0_{T1}.log.2_0-1-1")  # log on a committed slice: visible, reader filters blocks
    _touch(p / "not-a-data-file.txt")
    v = t.reload_timeline() and t.file_system_view()
    (s,) = v.latest_file_slices()
    assert s.file_id == "f1-0" and [lf.version for lf in s.log_files] == [1, 2]
    assert {g.file_id for g in v.all_file_groups()} == {"f1-0", "f2-0", "f3-0"}
    assert v.partitions() == ["p"]


def test_a_folder_of_data_files_is_a_partition_without_its_marker(tmp_path):
    """A lost ``.hoodie_partition_metadata`` hid the folder's rows from reads and its keys
    from the index (an upsert then wrote them twice); its files still name their commits."""
    t, w, p = _mor(tmp_path)
    _commit(w, T1)
    _touch(p / f"f1-0_0-1-1_{T1}.parquet")
    _touch(tmp_path / "t" / "unmarked" / f"f9-0_0-1-1_{T1}.parquet")  # no partition marker
    _touch(tmp_path / "t" / "not-hudi" / "data.parquet")
    v = t.reload_timeline() and t.file_system_view()
    assert v.partitions() == ["p", "unmarked"]
    assert {(s.partition_path, s.file_id) for s in v.latest_file_slices()} == {("p", "f1-0"), ("unmarked", "f9-0")}


def test_pending_compaction(tmp_path):
    t, w, p = _mor(tmp_path)
    _commit(w, T1)
    _touch(p / f"f1-0_0-1-1_{T1}.parquet")
    _touch(p / f".f1-0_{T1}.log.1_0-1-1")
    _commit(w, T2)
    _touch(p / f"g1-0_0-1-1_{T2}.parquet")
    op = avro_codec.default_record(
        "HoodieCompactionOperation", baseInstantTime=T1, fileId="f1-0", partitionPath="p",
        dataFilePath=f"f1-0_0-1-1_{T1}.parquet", deltaFilePaths=[f".f1-0_{T1}.log.1_0-1-1"])
    plan = avro_codec.serialize("HoodieCompactionPlan", avro_codec.default_record("HoodieCompactionPlan", operations=[op]))
    w.create_requested(Instant(T3, Action.COMPACTION, State.REQUESTED), plan)
    v = t.reload_timeline() and t.file_system_view()
    ops = v.pending_compaction_operations()
    assert list(ops) == [("p", "f1-0")] and ops[("p", "f1-0")][0] == T3
    by_id = {s.file_id: s for s in v.latest_file_slices()}
    assert by_id["f1-0"].base_instant == T3 and by_id["f1-0"].is_empty
    # compactor starts writing its base file; a later deltacommit logs into the new slice
    w.transition_to_inflight(Instant(T3, Action.COMPACTION, State.REQUESTED))
    _touch(p / f"f1-0_0-9-9_{T3}.parquet")
    _commit(w, T4)
    _touch(p / f".f1-0_{T3}.log.1_0-1-1")
    v = t.reload_timeline() and t.file_system_view()
    new = {s.file_id: s for s in v.latest_file_slices()}["f1-0"]
    assert new.base_instant == T3 and new.base_file is None and len(new.log_files) == 1
    merged = {s.file_id: s for s in v.latest_merged_file_slices()}["f1-0"]
    assert merged.base_instant == T1 and merged.base_file.commit_time == T1
    assert [lf.base_instant for lf in merged.log_files] == [T1, T3]
    assert {b.commit_time for b in v.latest_base_files()} == {T1, T2}
    assert v.file_groups_in_pending_services() == {("p", "f1-0")}
    # compaction completes: new base file visible
    w.complete(Instant(T3, Action.COMPACTION, State.INFLIGHT), b"{}")
    v = t.reload_timeline() and t.file_system_view()
    done = {s.file_id: s for s in v.latest_file_slices()}["f1-0"]
    assert done.base_file.commit_time == T3 and len(done.log_files) == 1
    assert v.pending_compaction_operations() == {}


def test_pending_clustering_and_replace(tmp_path):
    t, w, p = _mor(tmp_path)
    _commit(w, T1)
    _touch(p / f"f1-0_0-1-1_{T1}.parquet")
    _touch(p / f"f2-0_0-1-1_{T1}.parquet")
    sl = avro_codec.default_record("HoodieSliceInfo", fileId="f1-0", partitionPath="p")
    grp = avro_codec.default_record("HoodieClusteringGroup", slices=[sl])
    cplan = avro_codec.default_record("HoodieClusteringPlan", inputGroups=[grp])
    req = avro_codec.default_record("HoodieRequestedReplaceMetadata", operationType="CLUSTER", clusteringPlan=cplan)
    w.create_requested(Instant(T2, Action.REPLACE_COMMIT, State.REQUESTED), avro_codec.serialize("HoodieRequestedReplaceMetadata", req))
    v = t.reload_timeline() and t.file_system_view()
    assert v.pending_clustering_file_groups() == {("p", "f1-0"): T2}
    w.transition_to_inflight(Instant(T2, Action.REPLACE_COMMIT, State.REQUESTED))
    _touch(p / f"n1-0_0-1-1_{T2}.parquet")
    v = t.reload_timeline() and t.file_system_view()
    assert {s.file_id for s in v.latest_file_slices()} == {"f1-0", "f2-0"}
    w.complete(Instant(T2, Action.REPLACE_COMMIT, State.INFLIGHT),
               json.dumps({"partitionToReplaceFileIds": {"p": ["f1-0"]}}).encode())
    v = t.reload_timeline() and t.file_system_view()
    assert {s.file_id for s in v.latest_file_slices()} == {"f2-0", "n1-0"}
    assert v.replace_instants_by_group() == {("p", "f1-0"): T2}
    assert v.pending_clustering_file_groups() == {}
    assert {s.file_id for s in v.latest_file_slices(as_of=T1)} == {"f1-0", "f2-0"}


def test_archived_instants_stay_visible(tmp_path):
    t, w, p = _mor(tmp_path)
    _touch(p / f"f0-0_0-1-1_{T1}.parquet")  # its commit was archived
    _commit(w, T3)
    _touch(p / f"f1-0_0-1-1_{T3}.parquet")
    _touch(p / f"f5-0_0-1-1_{T5}.parquet")  # newer than anything completed: a failed write
    v = t.reload_timeline() and t.file_system_view()
    assert {s.file_id for s in v.latest_file_slices()} == {"f0-0", "f1-0"}


def test_timeline_start_is_first_write_not_first_instant(tmp_path):
    t, w, p = _mor(tmp_path)
    clean = Instant(T2, Action.CLEAN, State.REQUESTED)
    w.create_requested(clean)
    w.transition_to_inflight(clean)
    w.complete(clean, b"")
    _touch(p / f"f0-0_0-1-1_{T1}.parquet")  # older than the first write on the timeline: archived
    # Between the (unarchived) clean and the first write: its commit was archived
    # (cleans and commits archive independently), so Hudi shows it; so do we.
    _touch(p / f"f3-0_0-1-1_{T3}.parquet")
    _commit(w, T4)
    _touch(p / f"f4-0_0-1-1_{T4}.parquet")
    _touch(p / f"f5-0_0-1-1_{T5}.parquet")  # after the last write: failed
    v = t.reload_timeline() and t.file_system_view()
    assert {s.file_id for s in v.latest_file_slices()} == {"f0-0", "f3-0", "f4-0"}


def test_latest_slices_match_hudi_rs(conformance):
    hudi = __import__("pytest").importorskip("hudi")
    for kind in ("cow", "mor"):
        for tdir in sorted((conformance / "tables" / kind).iterdir()):
            ours = {
                (s.partition_path, s.file_id): (
                    s.base_instant,
                    s.base_file.file_name if s.base_file else "",
                    [lf.file_name for lf in s.log_files],
                )
                for s in HoodieTable.load(str(tdir)).file_system_view().latest_merged_file_slices()
            }
            table = hudi.HudiTableBuilder.from_base_uri(str(tdir)).build()
            theirs = {
                (fs.partition_path, fs.file_id): (
                    fs.creation_instant_time, fs.base_file_name, list(fs.log_file_names))
                for fs in table.get_file_slices()
            }
            assert ours == theirs, tdir


def test_v9_log_files_join_the_slice_their_completion_time_falls_in(conformance_next):
    """Table version 8+: ``.<fileId>_<deltaCommitTime>.log.*`` names the delta commit, and
    the log belongs to the slice whose base instant precedes its completion (Hudi 1.x)."""
    t = HoodieTable.load(str(conformance_next / "tables" / "mor" / "v9_txns_complex_nometa"))
    groups = {g.file_id: g for g in t.file_system_view().all_file_groups("region=us")}
    g = groups["bfbf1f57-f4cd-4186-afc4-2778be3d4e70-0"]
    assert [s.base_instant for s in g.slices] == ["20260307135857131", "20260307135909445"]
    assert [lf.base_instant for lf in g.slices[0].log_files] == ["20260307135900238", "20260307135901998"]
    assert g.slices[0].base_file is not None and g.slices[1].log_files == []
    # as of the second delta commit, the merged slice is the base file plus its log
    (s,) = [s for s in t.file_system_view().latest_merged_file_slices("region=us", as_of="20260307135901998")
            if s.file_id == g.file_id]
    assert s.base_instant == "20260307135857131" and [lf.base_instant for lf in s.log_files] == ["20260307135900238", "20260307135901998"]
