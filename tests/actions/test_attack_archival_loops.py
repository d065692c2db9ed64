"""Attack: table services in a loop with tight retention, checked by three readers after every
step (ours through the metadata table, ours listing storage, hudi-rs) and the metadata table's
``files`` partition against storage (tests/soak/service_loop.py).

F1 (issue 35): on a version 6 MERGE_ON_READ table, archival left a clean older than an archived
compaction commit at the start of the active timeline; the services' file-system view then took
that compaction's base files for uncommitted, the next compaction plan named the slice with no
base file, its output held only the log records, and the next clean deleted the old base file:
rows silently gone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak.service_loop import ServiceLoop

F1_SETTINGS = {"hoodie.compact.inline.max.delta.commits": "1", "hoodie.cleaner.commits.retained": "2",
               "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "5"}


#: the metadata table on (with the record index on v9, as Hudi 1.x writers enable it) and off
METADATA = {"mdt": {"hoodie.metadata.enable": "true"}, "no-mdt": {"hoodie.metadata.enable": "false"},
            "record-index": {"hoodie.metadata.enable": "true", "hoodie.metadata.record.index.enable": "true",
                             "hoodie.index.type": "RECORD_INDEX"}}


@pytest.mark.parametrize("version,metadata", [(6, "mdt"), (6, "no-mdt"), (9, "mdt"), (9, "no-mdt"),
                                              (9, "record-index")])
def test_mor_compaction_after_archival_keeps_every_row(tmp_path: Path, version: int, metadata: str) -> None:
    loop = ServiceLoop(str(tmp_path / "t"), version, "MERGE_ON_READ", {**F1_SETTINGS, **METADATA[metadata]},
                       new_keys=20, updated_keys=15)
    for _ in range(8):  # rows were gone by round 5 or 6 (v6, either setting)
        loop.run_round(["upsert", "upsert", "clean", "compact", "archive"])


#: F3 (issue 35): a v9 COPY_ON_WRITE table with a clean every second write and an archival
#: every third; the first bad step was around write 19
F3_SETTINGS = {"hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "3",
               "hoodie.keep.max.commits": "5"}


def test_metadata_table_archival_keeps_the_tombstones_of_a_clean(tmp_path: Path) -> None:
    """The clean's metadata-table delta commit completes after the metadata-table compaction
    its own update triggered, so that compaction's base files do not hold its tombstones; the
    metadata table's archival must keep it until a compaction that does has completed, or
    every reader listing through the metadata table sees the cleaned files again."""
    loop = ServiceLoop(str(tmp_path / "t"), 9, "COPY_ON_WRITE", F3_SETTINGS, new_keys=10, updated_keys=10)
    for write in range(1, 34):  # the files partition listed cleaned files from write 28 on
        loop.run_step(f"write {write}", loop.upsert)
        if write % 2 == 0:
            loop.run_step(f"clean after write {write}", loop.clean)
        if write % 3 == 0:
            loop.run_step(f"archival after write {write}", loop.archive)
    assert any(r.step.startswith("clean") and r.instant for r in loop.records), "no clean ran: nothing was tested"
    history = tmp_path / "t" / ".hoodie" / "metadata" / ".hoodie" / "timeline" / "history"
    assert history.is_dir() and any(history.iterdir()), "the metadata table archived nothing: nothing was tested"
