"""Maintaining tables real Hudi wrote: compaction, clustering, clean and archive on copies of
the conformance corpus keep every row (our reader and hudi-rs agree before and after)."""

import shutil

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table

from tests.actions.services_fixtures import load, timeline_files
from tests.table.normalize import hudi_rs_rows, normalize_table


def _copy(conformance, kind, name, tmp_path):
    src = conformance / "tables" / kind / name
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return str(dst)


@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v6_simplekeygen_nonhivestyle", "v6_nonpartitioned_rollback"])
def test_compact_hudi_written_mor(conformance, tmp_path, name):
    base = _copy(conformance, "mor", name, tmp_path)
    before = normalize_table(read_table(base))
    assert before == hudi_rs_rows(base)
    s = c.schedule_compaction(load(base), HoodieConfig({}), force=True)
    assert s.instant is not None, s.reason
    res = c.execute_pending_compactions(load(base), LocalExecutor())
    assert f"{res['instant']}.commit" in timeline_files(base)
    assert normalize_table(read_table(base)) == before
    assert normalize_table(read_table(base, query_type="read_optimized")) == before
    assert hudi_rs_rows(base) == before
    assert hudi_rs_rows(base, query_type="read_optimized") == before


@pytest.mark.parametrize("kind,name", [("cow", "v6_simplekeygen_nonhivestyle"), ("cow", "v6_complexkeygen_hivestyle"),
                                       ("mor", "v6_trips_8i1u")])
def test_cluster_and_clean_hudi_written(conformance, tmp_path, kind, name):
    base = _copy(conformance, kind, name, tmp_path)
    before = normalize_table(read_table(base))
    res = cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor())
    assert res["state"] == "completed", res
    assert normalize_table(read_table(base)) == before
    assert hudi_rs_rows(base) == before
    cl.run_clean(load(base), HoodieConfig({cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}),
                 LocalExecutor())
    assert normalize_table(read_table(base)) == before
    assert hudi_rs_rows(base) == before
