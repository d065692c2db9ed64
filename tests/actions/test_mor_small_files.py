"""MERGE_ON_READ inserts fill small files the way Hudi 0.14 does.

Read in Hudi 0.14 (hudi-client/hudi-spark-client):

- ``SparkUpsertDeltaCommitPartitioner.getSmallFiles`` / ``getSmallFileCandidates``: with an
  index that cannot index log files (SIMPLE, BLOOM), the candidates are the partition's
  latest file slices without log files and outside pending compactions whose base file is
  under ``hoodie.parquet.small.file.limit``, smallest first, at most
  ``hoodie.merge.small.file.group.candidates.limit`` (default 1). With an index that can
  (Hudi's in-memory index), every latest slice outside pending compactions whose base plus
  log bytes (logs scaled by ``hoodie.logfile.to.parquet.compression.ratio``) stay under
  ``hoodie.parquet.max.file.size``.
- ``UpsertPartitioner.assignInserts``: candidates in pending clustering are dropped; each
  takes ``(max file size - its size) / average record size`` inserts, the rest go to new
  file groups.
- ``BaseSparkDeltaCommitActionExecutor.handleUpdate``: a small-file group of an index blind
  to log files is merged into a new base file (a new file slice of the same group); otherwise
  the records are appended to the group's log.

The rule is written out again here (:func:`hudi_candidates`) from the table's file slices,
independently of the bucketing code, and every write is checked against it.
"""

from __future__ import annotations

import pytest

from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.write_model import to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table

BASE_CONF = {
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
}


def rows(ids, tag, p="a", ts=1):
    return [{"id": i, "ts": ts, "p": p, "v": f"{tag}{i}"} for i in ids]


def slices(base, part="a"):
    """Latest file slices of ``part``: file id -> (base file size or None, number of logs,
    base instant), and the file ids under a pending compaction."""
    view = HoodieTable.load(base).file_system_view()
    pending = {fid for (p, fid) in view.pending_compaction_operations() if p == part}
    out = {}
    for s in view.latest_file_slices(part):
        out[s.file_id] = (s.base_file.size if s.base_file else None, len(s.log_files), s.base_instant)
    return out, pending


def hudi_candidates(base, conf, part="a"):
    """Hudi 0.14's small-file candidates for an index blind to log files, in fill order."""
    latest, pending = slices(base, part)
    limit = int(conf.get("hoodie.parquet.small.file.limit", 104857600))
    n = int(conf.get("hoodie.merge.small.file.group.candidates.limit", 1))
    eligible = [(size, fid) for fid, (size, logs, _) in latest.items()
                if size is not None and logs == 0 and fid not in pending and size < limit]
    return [fid for _, fid in sorted(eligible)[:n]]


def stats_of(base, instant):
    meta = HoodieTable.load(base).timeline
    inst = meta.get(instant)
    return meta.commit_metadata(inst).write_stats


def test_twenty_small_inserts_fill_the_smallest_base_only_file_group(tmp_path):
    base = str(tmp_path / "t")
    # three groups from the first insert (fixed split), one of which then gets a log file
    first = dict(BASE_CONF, **{"hoodie.copyonwrite.insert.auto.split": "false",
                               "hoodie.copyonwrite.insert.split.size": "4"})
    write_arrow(base, to_arrow(rows(range(10), "a")), "insert", first, table_name="t")
    assert len(slices(base)[0]) == 3
    write_arrow(base, to_arrow(rows([0], "u", ts=2)), "upsert", BASE_CONF)  # a log on id 0's group
    with_log = [fid for fid, (_, logs, _) in slices(base)[0].items() if logs]
    assert len(with_log) == 1
    sizes = sorted(size for size, logs, _ in slices(base)[0].values() if not logs)
    # a limit just above the two base-only files: each fills until it grows past it
    conf = dict(BASE_CONF, **{"hoodie.parquet.small.file.limit": str(sizes[-1] + 300),
                              "hoodie.merge.small.file.group.candidates.limit": "2"})
    expected_rows = {r["id"]: r["v"] for r in rows(range(10), "a")}
    expected_rows[0] = "u0"
    chosen, new_groups = [], 0
    for k in range(20):
        if k == 10:  # a pending compaction: its group takes no inserts
            planned = schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True)
            assert planned.instant is not None
        before, _ = slices(base)
        candidates = hudi_candidates(base, conf)
        batch = rows(range(100 + 5 * k, 105 + 5 * k), f"i{k}-")
        result = write_arrow(base, to_arrow(batch), "insert", conf)
        expected_rows.update({r["id"]: r["v"] for r in batch})
        stats = stats_of(base, result.instant)
        touched = {st.file_id for st in stats}
        assert len(touched) == 1, stats
        (fid,) = touched
        if candidates:
            # all five fit the first candidate (the average record size is the 1 KB estimate)
            assert fid == candidates[0], (k, candidates, fid)
            (st,) = stats
            assert st.path.endswith(".parquet") and result.instant in st.path  # a new base file version
            assert st.prev_commit == before[fid][2]
            chosen.append(fid)
        else:
            assert fid not in before  # no small file left: a new file group
            new_groups += 1
        assert not any(".log." in st.path for st in stats)
    latest, pending = slices(base)
    # 20 inserts: the two base-only groups filled up past the limit, then few new ones (not 20)
    assert len(set(chosen)) >= 2 and 1 <= new_groups <= 5, (chosen, new_groups)
    assert len(latest) == 3 + new_groups
    assert with_log[0] not in chosen and not (pending & set(chosen[10:]))
    got = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert got == expected_rows
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_default_limits_keep_twenty_inserts_in_one_file_group(tmp_path):
    base = str(tmp_path / "t")
    for k in range(20):
        write_arrow(base, to_arrow(rows(range(5 * k, 5 * k + 5), f"v{k}-")), "insert", BASE_CONF, table_name="t")
    latest, _ = slices(base)
    assert len(latest) == 1
    ((size, logs, _),) = latest.values()
    assert logs == 0 and size is not None
    assert read_table(base).num_rows == 100
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_an_index_that_sees_log_files_appends_inserts_to_small_slices(tmp_path):
    base = str(tmp_path / "t")
    conf = dict(BASE_CONF, **{"hoodie.index.type": "IN_MEMORY"})
    write_arrow(base, to_arrow(rows(range(5), "a")), "insert", conf, table_name="t")
    (fid,) = slices(base)[0]
    for k in range(1, 6):
        result = write_arrow(base, to_arrow(rows(range(5 * k, 5 * k + 5), f"b{k}-")), "insert", conf)
        stats = stats_of(base, result.instant)
        assert {st.file_id for st in stats} == {fid}
        assert all(".log." in st.path for st in stats)
        assert (result.inserts, result.updates) == (5, 0)
    result = write_arrow(base, to_arrow(rows(range(27, 33), "c", ts=2)), "upsert", conf)
    assert (result.inserts, result.updates) == (3, 3)  # the log append tells inserts from updates
    latest, _ = slices(base)
    assert list(latest) == [fid] and latest[fid][1] >= 1
    # a group under a pending compaction takes no inserts: they open a new group
    assert schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True).instant is not None
    result = write_arrow(base, to_arrow(rows(range(40, 45), "d")), "insert", conf)
    assert fid not in {st.file_id for st in stats_of(base, result.instant)}
    assert read_table(base).num_rows == 38
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_failed_small_file_merge_is_rolled_back_without_a_trace(tmp_path):
    base = str(tmp_path / "t")
    write_arrow(base, to_arrow(rows(range(5), "a")), "insert", BASE_CONF, table_name="t")

    (fid,) = slices(base)[0]
    written = []

    class FailsAfterWriting(LocalExecutor):
        def map(self, fn, items):
            written.extend(st for group in super().map(fn, items) for st in group)
            raise RuntimeError("task lost after writing")

    with pytest.raises(RuntimeError):
        write_arrow(base, to_arrow(rows(range(5, 10), "b")), "insert", BASE_CONF, executor=FailsAfterWriting())
    # it had merged the inserts into a new base file of the one small group
    assert [(st["fileId"], st["path"].endswith(".parquet")) for st in written] == [(fid, True)]
    latest, _ = slices(base)
    assert list(latest) == [fid]
    assert sorted(r["id"] for r in read_table(base, columns=["id"]).to_pylist()) == list(range(5))
    parquet = list((tmp_path / "t" / "a").glob("*.parquet"))
    assert len(parquet) == 1
    write_arrow(base, to_arrow(rows(range(5, 10), "b")), "insert", BASE_CONF)
    assert read_table(base).num_rows == 10
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


@pytest.mark.parametrize("engine", ["dataframe", "driver_batch_tasks", "driver_batch_driver"])
def test_spark_paths_fill_the_same_small_file(spark, tmp_path, engine):
    """The DataFrame path and the driver-batch path (file work on Spark tasks or in the
    driver) bucket through the same rule: six inserts stay in one file group, each a new
    base file version of it."""
    from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES, DRIVER_FILES_MAX_BYTES
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    extra = {"dataframe": {DRIVER_BATCH_MAX_BYTES: "0"},
             "driver_batch_tasks": {DRIVER_BATCH_MAX_BYTES: str(32 << 20), DRIVER_FILES_MAX_BYTES: "0"},
             "driver_batch_driver": {DRIVER_BATCH_MAX_BYTES: str(32 << 20),
                                     DRIVER_FILES_MAX_BYTES: str(128 << 20)}}[engine]
    cfg = HoodieConfig(dict(BASE_CONF, **extra))
    base = str(tmp_path / "t")
    fid = None
    for k in range(6):
        batch = rows(range(5 * k, 5 * k + 5), f"v{k}-")
        result = upsert_dataframe(spark, spark.createDataFrame(to_arrow(batch)), base, "insert", cfg, "t")
        stats = stats_of(base, result.instant)
        if fid is None:
            (fid,) = {st.file_id for st in stats}
        else:
            assert hudi_candidates(base, BASE_CONF) == [fid]
            assert [(st.file_id, st.path.endswith(".parquet")) for st in stats] == [(fid, True)]
    assert list(slices(base)[0]) == [fid]
    assert read_table(base).num_rows == 30
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


@pytest.mark.parametrize("engine", ["dataframe", "driver_batch_tasks"])
def test_spark_paths_append_inserts_to_small_slices_with_an_index_that_sees_logs(spark, tmp_path, engine):
    from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES, DRIVER_FILES_MAX_BYTES
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    extra = {"dataframe": {DRIVER_BATCH_MAX_BYTES: "0"},
             "driver_batch_tasks": {DRIVER_BATCH_MAX_BYTES: str(32 << 20), DRIVER_FILES_MAX_BYTES: "0"}}[engine]
    cfg = HoodieConfig(dict(BASE_CONF, **{"hoodie.index.type": "IN_MEMORY"}, **extra))
    base = str(tmp_path / "t")
    upsert_dataframe(spark, spark.createDataFrame(to_arrow(rows(range(5), "a"))), base, "insert", cfg, "t")
    (fid,) = slices(base)[0]
    result = upsert_dataframe(spark, spark.createDataFrame(to_arrow(rows(range(2, 8), "b", ts=2))), base, "upsert", cfg)
    assert (result.inserts, result.updates) == (3, 3)
    stats = stats_of(base, result.instant)
    assert {st.file_id for st in stats} == {fid} and all(".log." in st.path for st in stats)
    got = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert got == {i: f"a{i}" if i < 2 else f"b{i}" for i in range(8)}
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
