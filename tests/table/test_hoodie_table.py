"""HoodieTable: loading, creating, helpful errors."""

from __future__ import annotations

import pytest

from airflow_hoodie.errors import HoodieConfigError, HoodieTableExistsError, HoodieTableNotFoundError
from airflow_hoodie.table.hoodie_table import HoodieTable


def test_load_conformance(conformance):
    t = HoodieTable.load(str(conformance / "tables/mor/v6_trips_8i1u"))
    assert t.is_mor and t.table_type == "MERGE_ON_READ" and t.table_name == "v6_trips_8i1u"
    assert t.timeline.completed().timestamps == ["20250331030642808", "20250331030645735"]
    assert t.partition_dir("city=chennai").endswith("/v6_trips_8i1u/city=chennai")
    assert t.partition_dir("") == t.base_path
    assert t.meta_path.endswith("/.hoodie")
    assert t.relative_path(t.base_path + "/a/b.parquet") == "a/b.parquet"
    assert t.reload_timeline().timestamps == t.timeline.timestamps
    assert len(t.archived_timeline()) == 0


def test_not_found(tmp_path):
    with pytest.raises(HoodieTableNotFoundError, match="no Hudi table at .*create one by running an upsert"):
        HoodieTable.load(str(tmp_path))
    assert not HoodieTable.exists(str(tmp_path))


def test_create(tmp_path):
    uri = "file://" + str(tmp_path / "t")
    t = HoodieTable.create(uri, {"hoodie.table.name": "t", "hoodie.table.recordkey.fields": "id"})
    assert t.table_type == "COPY_ON_WRITE" and t.config.table_version == 6
    assert (tmp_path / "t/.hoodie/.temp").is_dir() and (tmp_path / "t/.hoodie/archived").is_dir()
    text = (tmp_path / "t/.hoodie/hoodie.properties").read_text()
    assert text.startswith("#Properties saved on ") and "hoodie.table.checksum=" in text
    again = HoodieTable.create(uri, {"hoodie.table.name": "t"})
    assert again.config.checksum == t.config.checksum
    with pytest.raises(HoodieTableExistsError, match="different settings"):
        HoodieTable.create(uri, {"hoodie.table.name": "other"})
    with pytest.raises(HoodieConfigError):
        HoodieTable.create(str(tmp_path / "u"), {"hoodie.table.type": "MERGE_ON_READ"})
    loaded = HoodieTable.load(uri)
    assert loaded.config.record_key_fields == ["id"] and len(loaded.timeline) == 0
    assert loaded.file_system_view().latest_file_slices() == []


def test_new_instant_time_and_update_config(tmp_path, monkeypatch):
    import airflow_hoodie.table.timeline.instant as instant_mod

    monkeypatch.setattr(instant_mod, "_last_by_table", {})  # keep the far-future floor out of other tests
    t = HoodieTable.create(str(tmp_path / "t"), {"hoodie.table.name": "t", "hoodie.table.timeline.timezone": "UTC"})
    (tmp_path / "t/.hoodie/29990101000000000.commit.requested").write_bytes(b"")
    assert t.new_instant_time() == "29990101000000001"
    cfg = t.update_config({"hoodie.table.metadata.partitions": "files"}, deletes=("hoodie.table.timeline.timezone",))
    assert cfg.metadata_partitions == ["files"] and "hoodie.table.timeline.timezone" not in cfg
    assert not (tmp_path / "t/.hoodie/hoodie.properties.backup").exists()
    assert HoodieTable.load(str(tmp_path / "t")).config.metadata_partitions == ["files"]


def test_a_far_future_instant_in_one_table_does_not_drag_another_tables_clock(tmp_path):
    """The instant clock is per table: a stray far-future .inflight stays that table's problem."""
    a = HoodieTable.create(str(tmp_path / "a"), {"hoodie.table.name": "a"})
    b = HoodieTable.create(str(tmp_path / "b"), {"hoodie.table.name": "b"})
    (tmp_path / "a/.hoodie/29990101000000000.inflight").write_bytes(b"")
    assert a.new_instant_time() > "29990101000000000"
    assert b.new_instant_time() < "29000101000000000"
