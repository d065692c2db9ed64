"""File groups/slices built from names; Hudi's log file order."""

from __future__ import annotations

from airflow_hoodie.table.file_group.file_group import BaseFile, LogFile, build_file_groups


def _bf(name, part="p"):
    return BaseFile.from_path(f"/t/{part}/{name}", 10, part)


def _lf(name, part="p"):
    return LogFile.from_path(f"/t/{part}/{name}", 5, part)


def test_slicing_and_log_order():
    files_b = [_bf("f1-0_0-1-1_20240101000000000.parquet"), _bf("f1-0_0-2-2_20240102000000000.parquet")]
    files_l = [
        _lf(".f1-0_20240102000000000.log.2_0-1-1"),
        _lf(".f1-0_20240102000000000.log.1_2-1-1"),
        _lf(".f1-0_20240102000000000.log.1_10-1-1"),
        _lf(".f1-0_20240101000000000.log.1_0-1-1"),
        _lf(".f2-0_20240103000000000.log.1_0-1-1"),
    ]
    groups = build_file_groups(files_b, files_l)
    assert sorted(groups) == [("p", "f1-0"), ("p", "f2-0")]
    g = groups[("p", "f1-0")]
    assert [s.base_instant for s in g.slices] == ["20240101000000000", "20240102000000000"]
    latest = g.latest_slice()
    assert latest.base_file.commit_time == "20240102000000000"
    # version, then write token compared as strings ("10-..." < "2-...")
    assert [lf.file_name for lf in latest.log_files] == [
        ".f1-0_20240102000000000.log.1_10-1-1",
        ".f1-0_20240102000000000.log.1_2-1-1",
        ".f1-0_20240102000000000.log.2_0-1-1",
    ]
    assert g.latest_slice_before_or_on("20240101500000000").base_instant == "20240101000000000"
    assert g.latest_base_file().commit_time == "20240102000000000"
    log_only = groups[("p", "f2-0")].latest_slice()
    assert log_only.base_file is None and log_only.total_size == 5
    g.add_empty_slice("20240105000000000")
    assert g.latest_slice().is_empty and g.latest_base_file().commit_time == "20240102000000000"


def test_non_data_names_rejected():
    assert BaseFile.from_path("/t/p/.hoodie_partition_metadata", 1, "p") is None
    assert LogFile.from_path("/t/p/x.parquet", 1, "p") is None
