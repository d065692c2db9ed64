"""Keys of record merging: the payload class, Hudi 1.x's merge mode and the delete marker
(Hudi's HoodiePayloadConfig, HoodieTableConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

PAYLOAD_CLASS = "hoodie.compaction.payload.class"
PAYLOAD_CLASS_ALT = "hoodie.table.payload.class"
MERGE_MODE = "hoodie.record.merge.mode"
DELETE_FIELD = "hoodie.payload.delete.field"
DELETE_MARKER = "hoodie.payload.delete.marker"

OVERWRITE_WITH_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"

register(
    ConfigKey(
        PAYLOAD_CLASS,
        OVERWRITE_WITH_LATEST_PAYLOAD,
        "Payload class whose merge semantics readers and compaction apply.",
        alternatives=(PAYLOAD_CLASS_ALT,),
    ),
    ConfigKey(MERGE_MODE, None, "EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING or CUSTOM (Hudi 1.x)."),
    ConfigKey(DELETE_FIELD, None, "Column whose value equal to the delete marker marks a delete."),
    ConfigKey(DELETE_MARKER, None, "Value of hoodie.payload.delete.field that marks a delete."),
)
