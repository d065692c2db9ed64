from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.settings.clustering import ClusteringSettings

from tests.actions.services_fixtures import slice_

MB = 1024 * 1024


def _cfg(**kw):
    return HoodieConfig({f"hoodie.clustering.plan.strategy.{k.replace('_', '.')}": str(v) for k, v in kw.items()})


def test_groups_small_files_largest_first_with_byte_cap():
    slices = [slice_("p", f"f{i}", 1, s * MB) for i, s in enumerate([10, 40, 30, 500, 20])]
    cfg = HoodieConfig({cu.SMALL_FILE_LIMIT: str(100 * MB), cu.MAX_BYTES_PER_GROUP: str(60 * MB),
                        cu.TARGET_FILE_MAX_BYTES: str(25 * MB)})
    plan = cu.build_clustering_plan({"p": slices}, ClusteringSettings.from_config(cfg), set())
    groups = [[s["fileId"] for s in g["slices"]] for g in plan["inputGroups"]]
    assert groups == [["f1"], ["f2", "f4", "f0"]]
    assert [g["numOutputFileGroups"] for g in plan["inputGroups"]] == [2, 3]


def test_excluded_skip_partitions_and_max_groups():
    by_part = {p: [slice_(p, f"{p}-a", 1, MB), slice_(p, f"{p}-b", 1, MB)] for p in ("2024/01", "2024/02", "2024/03")}
    cfg = HoodieConfig({cu.SKIP_PARTITIONS_FROM_LATEST: "1", cu.MAX_BYTES_PER_GROUP: str(MB)})
    plan = cu.build_clustering_plan(by_part, ClusteringSettings.from_config(cfg), {("2024/01", "2024/01-a")})
    ids = [s["fileId"] for g in plan["inputGroups"] for s in g["slices"]]
    assert ids == ["2024/01-b", "2024/02-a", "2024/02-b"]
    cfg = HoodieConfig({cu.MAX_NUM_GROUPS: "2", cu.MAX_BYTES_PER_GROUP: str(MB)})
    assert len(cu.build_clustering_plan(by_part, ClusteringSettings.from_config(cfg), set())["inputGroups"]) == 2


def test_nothing_qualifies():
    assert cu.build_clustering_plan({"p": [slice_("p", "a", 1, 400 * MB)]}, ClusteringSettings.from_config(HoodieConfig({})), set()) is None


def test_single_slice_groups_only_when_enabled_or_sorting():
    one = {"p": [slice_("p", "a", 1, MB)]}
    assert cu.build_clustering_plan(one, ClusteringSettings.from_config(HoodieConfig({cu.SINGLE_GROUP: "false"})), set()) is None
    plan = cu.build_clustering_plan(one, ClusteringSettings.from_config(HoodieConfig({cu.SINGLE_GROUP: "false", cu.SORT_COLUMNS: "ts"})), set())
    assert plan["strategy"]["strategyParams"][cu.SORT_COLUMNS] == "ts"
