"""Keys of Hudi 1.x's LSM timeline (the archived timeline of table versions 8 and 9)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

#: HoodieArchivalConfig.TIMELINE_COMPACTION_BATCH_SIZE
COMPACTION_BATCH_SIZE = "hoodie.timeline.compaction.batch.size"

register(
    ConfigKey(COMPACTION_BATCH_SIZE, "10",
              "Compact the oldest files of an LSM timeline layer into the next layer once this many gather"),
)
