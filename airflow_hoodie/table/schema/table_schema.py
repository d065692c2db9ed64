"""The table's current schema, resolved the one way Hudi's TableSchemaResolver does it.

The newest completed write that recorded its writer schema in ``extraMetadata.schema``
wins; a table nobody has written since it was created falls back to
``hoodie.table.create.schema``. Writers (schema evolution), table services (the schema
their new files are written with) and readers (the type of an empty result) all ask here,
so they cannot disagree about which schema is current.
"""

from __future__ import annotations

import json
from typing import Any

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.timeline.timeline import Timeline

CREATE_SCHEMA = "hoodie.table.create.schema"


def latest_avro_schema(timeline: Timeline | None, create_schema: str | None) -> dict[str, Any] | None:
    """The Avro schema (a dict) of the newest completed write on ``timeline``, else the
    create schema; None when neither exists. Unreadable metadata is passed over: an older
    commit still knows the schema."""
    for inst in reversed(timeline.completed_commits().instants if timeline is not None else []):
        try:
            schema = timeline.commit_metadata(inst).schema
        except (HoodieError, ValueError):
            continue
        if schema:
            return json.loads(schema)
    return json.loads(create_schema) if create_schema else None
