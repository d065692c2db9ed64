"""Keys of record merging: the payload class, Hudi 1.x's merge mode and the delete marker
(Hudi's HoodiePayloadConfig, HoodieTableConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

PAYLOAD_CLASS = "hoodie.compaction.payload.class"
PAYLOAD_CLASS_ALT = "hoodie.table.payload.class"
MERGE_MODE = "hoodie.record.merge.mode"
#: Hudi 1.x's write option of the merge mode; a new table persists it as hoodie.record.merge.mode
WRITE_MERGE_MODE = "hoodie.write.record.merge.mode"
MERGE_STRATEGY_ID = "hoodie.record.merge.strategy.id"
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
    ConfigKey(MERGE_MODE, None, "EVENT_TIME_ORDERING (greatest ordering value wins) or COMMIT_TIME_ORDERING (latest "
              "write wins), Hudi 1.x; CUSTOM is refused. Unset: event time when ordering fields are set, else commit "
              "time.", (WRITE_MERGE_MODE,)),
    ConfigKey(MERGE_STRATEGY_ID, None, "Hudi's record merge strategy id; only its event-time and commit-time ids "
              "are supported.", ("hoodie.compaction.record.merger.strategy",)),
    ConfigKey(DELETE_FIELD, None, "Column whose value equal to the delete marker marks a delete."),
    ConfigKey(DELETE_MARKER, None, "Value of hoodie.payload.delete.field that marks a delete."),
)
