"""Typed plan views: round trips through Hudi's Avro and the instant-file helpers."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieTimelineError
from airflow_hoodie.table.metadata import avro_codec, plan_files, plans
from airflow_hoodie.table.metadata.plans import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    CompactionOperation,
    CompactionPlan,
    InstantInfo,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    SavepointMetadata,
    SavepointPartitionMetadata,
    SliceInfo,
)
from airflow_hoodie.table.storage.storage import Storage

ROLLBACK_DIR = "tables/mor/v6_nonpartitioned_rollback/.hoodie"
REPLACE_DIR = "tables/cow/v6_simplekeygen_nonhivestyle_overwritetable/.hoodie"


def _samples() -> list[plans.AvroView]:
    op = CompactionOperation(
        base_instant_time="001", file_id="f1-0", partition_path="2024/01/01",
        data_file_path="f1-0_0-1-2_001.parquet", delta_file_paths=[".f1-0_001.log.1_0-1-2"],
        metrics={"TOTAL_LOG_FILES": 1, "TOTAL_IO_MB": 2.5},
    )
    return [
        CompactionPlan(operations=[op, CompactionOperation("002", "f2-0")], extra_metadata={"a": "b"}),
        CleanerPlan(
            policy="KEEP_LATEST_COMMITS",
            earliest_instant_to_retain=ActionInstant("003", "commit", "COMPLETED"),
            last_completed_commit_timestamp="005",
            file_paths_to_be_deleted_per_partition={"p": [CleanFileInfo("/t/p/f1-0_0-1-2_001.parquet", False)]},
            partitions_to_be_deleted=["gone"],
        ),
        CleanMetadata(
            start_clean_time="006", time_taken_in_millis=12, total_files_deleted=1, earliest_commit_to_retain="003",
            partition_metadata={"p": CleanPartitionMetadata("p", "KEEP_LATEST_COMMITS", ["x"], ["x"], [], False)},
            last_completed_commit_timestamp="005",
        ),
        RequestedReplaceMetadata(
            clustering_plan=ClusteringPlan(
                input_groups=[
                    ClusteringGroup(
                        slices=[SliceInfo("f1-0", "p", "/t/p/f1-0_0-1-2_001.parquet", [])],
                        metrics={"TOTAL_FILE_SIZE": 10},
                        num_output_file_groups=2,
                    )
                ],
                strategy=ClusteringStrategy("org.apache.hudi.SomeStrategy", {"k": "v"}),
            ),
        ),
        RollbackPlan(
            instant_to_rollback=InstantInfo("007", "deltacommit"),
            rollback_requests=[
                RollbackRequest("p", "", "", ["/t/p/f3-0_0-1-2_007.parquet"], {}),
                RollbackRequest("p", "f1-0", "001", [], {"/t/p/.f1-0_001.log.1_0-1-2": 100}),
            ],
        ),
        RollbackMetadata(
            start_rollback_time="008", time_taken_in_millis=5, total_files_deleted=1, commits_rollback=["007"],
            partition_metadata={"p": RollbackPartitionMetadata("p", ["/t/p/a"], [], {"/t/p/.l": 10}, {})},
            instants_rollback=[InstantInfo("007", "deltacommit")],
        ),
        SavepointMetadata(
            savepointed_by="airflow", savepointed_at=1700000000, comments="before migration",
            partition_metadata={"p": SavepointPartitionMetadata("p", ["f1-0_0-1-2_001.parquet"])},
        ),
    ]


@pytest.mark.parametrize("view", _samples(), ids=lambda v: type(v).__name__)
def test_views_round_trip(view: plans.AvroView) -> None:
    data = view.to_bytes()
    again = type(view).from_bytes(data)
    assert again == view
    # the bytes are a valid container of Hudi's schema, readable without our view
    assert avro_codec.deserialize(data)["version"] == view.version


def test_compaction_plan_defaults_match_hudi() -> None:
    plan = CompactionPlan(operations=[CompactionOperation("001", "f1-0", "p", "b.parquet", ["l1"])])
    record = plan.to_avro()
    assert record["version"] == 2
    assert record["operations"][0]["deltaFilePaths"] == ["l1"]
    assert plan.file_group_ids() == {("p", "f1-0")}


def test_cleaner_plan_v1_paths() -> None:
    plan = CleanerPlan(policy="KEEP_LATEST_COMMITS", version=1, file_paths_to_be_deleted_per_partition=None,
                       files_to_be_deleted_per_partition={"p": ["a.parquet"], "": ["b.parquet"]})
    assert plan.paths_to_delete("/t") == {"p": ["/t/p/a.parquet"], "": ["/t/b.parquet"]}
    with pytest.raises(HoodieTimelineError, match="base path"):
        plan.paths_to_delete()
    v2 = CleanerPlan.from_bytes(_samples()[1].to_bytes())
    assert v2.paths_to_delete() == {"p": ["/t/p/f1-0_0-1-2_001.parquet"]}


def test_conformance_rollback_files(conformance) -> None:
    plan = RollbackPlan.from_bytes((conformance / ROLLBACK_DIR / "20250126040936578.rollback.requested").read_bytes())
    assert plan.instant_to_rollback == InstantInfo("20250126040826878", "deltacommit")
    assert [r.file_id for r in plan.rollback_requests] == ["", "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0"]
    assert plan.rollback_requests[1].log_blocks_to_be_deleted == {
        "file:/opt/data/external_tables/v6_nonpartitioned_rollback/"
        ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.1_0-33-43": 11828
    }
    meta = RollbackMetadata.from_bytes((conformance / ROLLBACK_DIR / "20250126040936578.rollback").read_bytes())
    assert meta.commits_rollback == ["20250126040826878"]
    assert meta.total_files_deleted == 1
    assert meta.partition_metadata[""].success_delete_files[0].endswith("20250126040826878.parquet")
    # our re-encoding of Hudi's plan is Hudi's bytes (modulo the sync marker)
    data = (conformance / ROLLBACK_DIR / "20250126040936578.rollback.requested").read_bytes()
    assert avro_codec.serialize("HoodieRollbackPlan", plan.to_avro(), sync_marker=data[-16:]) == data


def test_conformance_insert_overwrite_requested(conformance) -> None:
    data = (conformance / REPLACE_DIR / "20240707001303088.replacecommit.requested").read_bytes()
    meta = plan_files.requested_replace_from_bytes(data)
    assert meta is not None and meta.operation_type is None and meta.clustering_plan is None
    assert not meta.is_clustering
    assert plan_files.requested_replace_from_bytes(b"") is None


def test_instant_file_helpers(tmp_path) -> None:
    storage = Storage.local()
    meta_path = str(tmp_path / ".hoodie")
    storage.mkdirs(meta_path)
    plan = _samples()[0]
    path = plan_files.write_view(storage, meta_path, "001.compaction.requested", plan)
    assert path.endswith("/.hoodie/001.compaction.requested")
    assert plan_files.read_compaction_plan(storage, meta_path, "001.compaction.requested") == plan
    with pytest.raises(HoodieTimelineError, match="already exists"):
        plan_files.write_view(storage, meta_path, "001.compaction.requested", plan)
    plan_files.write_view(storage, meta_path, "001.compaction.requested", plan, overwrite=True)

    class FakeInstant:
        file_name = "001.compaction.requested"

    assert plan_files.read_avro_instant(storage, meta_path, FakeInstant())["version"] == 2
    clustering = _samples()[3]
    plan_files.write_view(storage, meta_path, "002.replacecommit.requested", clustering)
    cplan = plan_files.read_clustering_plan(storage, meta_path, "002.replacecommit.requested")
    assert cplan is not None and cplan.file_group_ids() == {("p", "f1-0")}
    with pytest.raises(HoodieTimelineError, match="does not exist"):
        plan_files.read_cleaner_plan(storage, meta_path, "009.clean.requested")
    storage.write_bytes(f"{meta_path}/010.clean.requested", b"garbage")
    with pytest.raises(HoodieCorruptedDataError):
        plan_files.read_cleaner_plan(storage, meta_path, "010.clean.requested")


def test_schema_for_file_name() -> None:
    assert plan_files.schema_for_file_name("1.clean.requested") == "HoodieCleanerPlan"
    assert plan_files.schema_for_file_name("1.clean") == "HoodieCleanMetadata"
    assert plan_files.schema_for_file_name("1.compaction.inflight") == "HoodieCompactionPlan"
    assert plan_files.schema_for_file_name("1.rollback") == "HoodieRollbackMetadata"
    assert plan_files.schema_for_file_name("1.commit") is None
    assert plan_files.schema_for_file_name("1.inflight") is None


def test_views_are_plain_data() -> None:
    for view in _samples():
        assert dataclasses.is_dataclass(view)
        import pickle

        assert pickle.loads(pickle.dumps(view)) == view


def test_restore_views_round_trip() -> None:
    rb = _samples()[5]
    meta = plans.RestoreMetadata("009", 3, ["007"], {"007": [rb, None]}, restore_instant_info=[InstantInfo("007", "deltacommit")])
    assert plans.RestoreMetadata.from_bytes(meta.to_bytes()) == meta
    plan = plans.RestorePlan([InstantInfo("007", "deltacommit")])
    assert plans.RestorePlan.from_bytes(plan.to_bytes()) == plan


def test_archived_meta_entries(conformance) -> None:
    from airflow_hoodie.errors import HoodieNotSupportedError

    hoodie = conformance / ROLLBACK_DIR
    cases = [
        ("20250126060846931", "deltacommit", "COMPLETED", hoodie / "20250126060846931.deltacommit", "hoodieCommitMetadata"),
        ("20250126060846931", "deltacommit", "REQUESTED", hoodie / "20250126060846931.deltacommit.requested", None),
        ("20250126040936578", "rollback", "COMPLETED", hoodie / "20250126040936578.rollback", "hoodieRollbackMetadata"),
        ("20240707001303088", "replacecommit", "COMPLETED",
         conformance / REPLACE_DIR / "20240707001303088.replacecommit", "hoodieReplaceCommitMetadata"),
        ("20240707001303088", "replacecommit", "INFLIGHT",
         conformance / REPLACE_DIR / "20240707001303088.replacecommit.inflight", "HoodieInflightReplaceMetadata"),
        ("20240707001303088", "replacecommit", "REQUESTED",
         conformance / REPLACE_DIR / "20240707001303088.replacecommit.requested", "hoodieRequestedReplaceMetadata"),
    ]
    for ts, action, state, path, field_name in cases:
        entry = plan_files.archived_meta_entry(ts, action, state, path.read_bytes())
        assert entry["commitTime"] == ts and entry["actionType"] == action and entry["actionState"] == state
        set_fields = {k for k, v in entry.items() if v is not None} - {"commitTime", "actionType", "actionState"}
        assert set_fields == ({field_name} if field_name else set())
        assert avro_codec.deserialize(avro_codec.serialize("HoodieArchivedMetaEntry", entry)) == entry
    plan_entry = plan_files.archived_meta_entry("001", "compaction", "requested", _samples()[0].to_bytes())
    assert plan_entry["hoodieCompactionPlan"]["version"] == 2 and plan_entry["actionState"] == "REQUESTED"
    with pytest.raises(HoodieNotSupportedError):
        plan_files.archived_meta_entry("001", "restore", "COMPLETED", b"")
