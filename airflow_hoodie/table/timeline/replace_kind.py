"""Which replacecommits are clusterings: the one rule for it.

A replacecommit is a clustering when its requested metadata
(``HoodieRequestedReplaceMetadata``) says ``operationType`` CLUSTER; insert_overwrite and
insert_overwrite_table write the same file with their own operation type, so "has a
non-empty .requested" is not the test. Table version 8+ names pending clusterings
``clustering`` outright.
"""

from __future__ import annotations

from typing import Any, Mapping

from airflow_hoodie.errors import HoodieError

CLUSTER_OPERATION = "CLUSTER"


def is_clustering_requested(requested: bytes) -> bool:
    """Whether a replacecommit's ``.requested`` content is a clustering plan."""
    if not requested:
        return False
    from airflow_hoodie.table.metadata import avro_codec  # noqa: PLC0415 - fastavro only when needed

    try:
        meta = avro_codec.deserialize(requested, "HoodieRequestedReplaceMetadata")
    except (HoodieError, ValueError, EOFError, KeyError, IndexError):
        return False
    return is_clustering_metadata(meta)


def is_clustering_metadata(meta: Mapping[str, Any]) -> bool:
    """The rule itself, on decoded ``HoodieRequestedReplaceMetadata`` (for callers that
    decode the plan anyway, such as the file system view)."""
    return str(meta.get("operationType") or "").upper() == CLUSTER_OPERATION
