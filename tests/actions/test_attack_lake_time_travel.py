"""Attack: reads pinned to an instant, and incremental reads, on a table whose older slices a
clean removed and whose older instants archival moved to the archived timeline. What a reader
returns must be the table as it was at that instant (or a refusal), never the rows that
happened to survive the clean."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table


def _config(version: int, table_type: str = "COPY_ON_WRITE") -> dict[str, str]:
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.time.generator.max_expected_clock_skew_ms": "0",
           "hoodie.metadata.compact.max.delta.commits": "3"}  # archival stays behind its compaction
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    return cfg


def _rows(pairs: list[tuple[str, str]], ts: int) -> pa.Table:
    return pa.table({"id": [k for k, _ in pairs], "p": [p for _, p in pairs], "ts": [ts] * len(pairs),
                     "v": [f"{k}{ts}" for k, _ in pairs]})


def _read(base: str, **kw: str) -> dict[str, str]:
    return {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"], **kw).to_pylist()}


@pytest.mark.parametrize("version", [6, 9])
def test_time_travel_into_what_a_clean_removed_is_refused(tmp_path: Path, version: int) -> None:
    """a in p0 is updated twice, b in p1 never: the clean (1 commit retained) removes p0's first
    slice only, so a read as of the first write would return b alone, silently."""
    base = str(tmp_path / "t")
    cfg = _config(version)
    first = write_arrow(base, _rows([("a", "p0"), ("b", "p1")], 1), "upsert", cfg).instant
    for ts in (2, 3):
        write_arrow(base, _rows([("a", "p0")], ts), "upsert", cfg)
    done = cl.run_clean(HoodieTable.load(base), HoodieConfig({**cfg, cl.POLICY: cl.KEEP_LATEST_COMMITS,
                                                             "hoodie.cleaner.commits.retained": "1"}), LocalExecutor())
    assert done["files_deleted"] == 1 and done["earliest_commit_to_retain"] > first
    assert _read(base) == {"a": "a3", "b": "b1"}
    with pytest.raises(HoodieError, match="clean"):
        _read(base, as_of=first)  # {"b": "b1"} before the refusal: a lost without a word


@pytest.mark.parametrize("version, table_type", [(6, "MERGE_ON_READ"), (9, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_time_travel_and_incremental_reads_after_clean_and_archival(tmp_path: Path, version: int,
                                                                    table_type: str) -> None:
    """Six writes over two partitions (MOR: compacted after the second and the fourth), a
    clean keeping two commits, archival down to three (four at most):
    each retained instant reads as the model had it, and the incremental read after every
    instant (archived ones included, which Hudi serves by a full scan filtered on commit time)
    returns exactly the rows whose current version came later; hudi-rs agrees."""
    base = str(tmp_path / "t")
    cfg = _config(version, table_type)
    model: dict[str, tuple[str, str]] = {}  # key -> (value, instant that wrote it)
    states: list[tuple[str, dict[str, str]]] = []
    finished: dict[str, str] = {}  # write -> its completion time (Hudi 1.x windows run on those)
    writes = [[("a", "p0"), ("b", "p1"), ("c", "p0")], [("a", "p0")], [("d", "p1"), ("b", "p1")], [("a", "p0")],
              [("c", "p0"), ("e", "p1")], [("a", "p0")]]
    for ts, pairs in enumerate(writes, start=1):
        instant = write_arrow(base, _rows(pairs, ts), "upsert", cfg).instant
        done = HoodieTable.load(base).reload_timeline().get(instant)
        finished[instant] = done.completion_time if version >= 8 else instant  # before archival moves it
        model.update({k: (f"{k}{ts}", instant) for k, _ in pairs})
        states.append((instant, {k: v for k, (v, _) in model.items()}))
        if table_type == "MERGE_ON_READ" and ts in (2, 4):  # new slices for the clean to remove
            assert c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True).instant is not None
            c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
    res = cl.run_clean(HoodieTable.load(base), HoodieConfig({**cfg, cl.POLICY: cl.KEEP_LATEST_COMMITS,
                                                            "hoodie.cleaner.commits.retained": "2"}), LocalExecutor())
    assert res.get("files_deleted", 0) > 0, res
    archived = run_archive(HoodieTable.load(base), HoodieConfig({**cfg, "hoodie.keep.min.commits": "3",
                                                                 "hoodie.keep.max.commits": "4",
                                                                 "hoodie.cleaner.commits.retained": "2"}))
    assert archived.get("archived_instants"), archived
    timeline = HoodieTable.load(base).reload_timeline()
    active = {i.timestamp: i for i in timeline.instants if i.is_completed}
    retained = res["earliest_commit_to_retain"]
    assert _read(base) == states[-1][1]
    for instant, expected in states:
        if instant >= retained:
            assert _read(base, as_of=instant) == expected, f"as of {instant}"
            assert normalize_table(read_table(base, as_of=instant)) == hudi_rs_rows(base, as_of=instant)
        # every start, archived ones too (Hudi then scans and filters on commit time); Hudi
        # 1.x (v8/v9) windows run on completion times, so the start's own commit is in them
        later = {k: v for k, (v, w) in model.items() if finished[w] > instant}
        incremental = read_table(base, query_type="incremental", start=instant)
        assert {r["id"]: r["v"] for r in incremental.to_pylist()} == later, f"incremental after {instant}"
        if instant in active:  # (hudi-rs 0.5 reads less from an archived start)
            assert normalize_table(incremental) == hudi_rs_rows(base, query_type="incremental", start=instant)
