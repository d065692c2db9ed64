"""Plans and metadata as instant files: typed reads and writes of ``.hoodie/<instant>`` files,
and the ``HoodieArchivedMetaEntry`` form of an instant file.

For tools and tests that address instant files by name; the write and service flows go
through :class:`Timeline` / :class:`TimelineWriter`.
"""

from __future__ import annotations

from typing import Any

from airflow_hoodie.errors import HoodieNotSupportedError, HoodieTimelineError
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
)
from airflow_hoodie.table.metadata.plans import (
    AvroView,
    CleanerPlan,
    CleanMetadata,
    ClusteringPlan,
    CompactionPlan,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
    T,
)

# ---------------------------------------------------------------------------- archive entries
#: HoodieInstant.State names as the archive stores them in ``actionState``
_STATE_NAMES = {"requested": "REQUESTED", "inflight": "INFLIGHT", "completed": "COMPLETED"}


def archived_meta_entry(
    timestamp: str, action: str, state: Any, content: bytes, state_transition_time: str | None = None
) -> dict[str, Any]:
    """The HoodieArchivedMetaEntry record Hudi's archiver writes for one instant file.

    ``action`` is the instant file's action (a completed compaction is a ``commit``),
    ``state`` a State enum or its name/value, ``content`` the instant file's bytes.
    Mirrors Hudi 0.14's MetadataConversionUtils.createMetaWrapper: completed
    commits/deltacommits carry their commit metadata (Avro form), clean/rollback/savepoint
    their Avro metadata, requested compactions their plan, replacecommits their requested
    plan, inflight body or replace metadata; fields not set stay null (``version`` too).
    ``state_transition_time`` is the instant file's modification time formatted as an
    instant time (Hudi 0.14's HoodieInstant.getStateTransitionTime), when known.
    """

    state_name = _STATE_NAMES.get(str(getattr(state, "value", state)).lower(), str(getattr(state, "name", state)).upper())
    entry = {f["name"]: None for f in avro_codec.schema_dict("HoodieArchivedMetaEntry")["fields"]}
    entry.update(
        commitTime=timestamp, actionState=state_name, actionType=action, stateTransitionTime=state_transition_time
    )
    completed = state_name == "COMPLETED"
    if action in ("commit", "deltacommit"):
        if content:
            entry["hoodieCommitMetadata"] = CommitMetadata.from_json(content).to_avro()
    elif action == "clean":
        if content:
            if completed:
                entry["hoodieCleanMetadata"] = avro_codec.deserialize(content, "HoodieCleanMetadata")
            else:
                entry["hoodieCleanerPlan"] = avro_codec.deserialize(content, "HoodieCleanerPlan")
    elif action == "replacecommit":
        if content:
            if completed:
                entry["hoodieReplaceCommitMetadata"] = ReplaceCommitMetadata.from_json(content).to_avro()
            elif state_name == "INFLIGHT":
                entry["HoodieInflightReplaceMetadata"] = CommitMetadata.from_json(content).to_avro()
            else:
                entry["hoodieRequestedReplaceMetadata"] = avro_codec.deserialize(
                    content, "HoodieRequestedReplaceMetadata"
                )
    elif action == "rollback":
        if completed and content:
            entry["hoodieRollbackMetadata"] = avro_codec.deserialize(content, "HoodieRollbackMetadata")
    elif action == "savepoint":
        if content:
            entry["hoodieSavePointMetadata"] = avro_codec.deserialize(content, "HoodieSavepointMetadata")
    elif action in ("compaction", "logcompaction"):
        if state_name == "REQUESTED" and content:
            entry["hoodieCompactionPlan"] = avro_codec.deserialize(content, "HoodieCompactionPlan")
    elif action == "indexing":
        # HoodieArchivedMetaEntry has a field for the index commit metadata, none for the plan
        if content and completed:
            entry["hoodieIndexCommitMetadata"] = avro_codec.deserialize(content, "HoodieIndexCommitMetadata")
    else:
        raise HoodieNotSupportedError(f"Hudi does not archive {action} instants ({timestamp})")
    return entry


# ---------------------------------------------------------------------------- file helpers
def _file_name(instant: Any) -> str:
    if isinstance(instant, str):
        return instant
    name = getattr(instant, "file_name", None)
    if not isinstance(name, str):
        raise TypeError(f"expected an instant file name or an object with .file_name, got {instant!r}")
    return name


def instant_path(meta_path: str, instant: Any) -> str:
    """Path of an instant file under ``.hoodie`` (``meta_path``)."""
    return f"{meta_path.rstrip('/')}/{_file_name(instant)}"


def read_instant_bytes(storage: Any, meta_path: str, instant: Any) -> bytes:
    path = instant_path(meta_path, instant)
    if not storage.exists(path):
        raise HoodieTimelineError(
            f"instant file {path} does not exist; the instant may have been archived, rolled back or "
            "moved to another state - reload the timeline and retry"
        )
    return storage.read_bytes(path)


def write_instant_bytes(storage: Any, meta_path: str, instant: Any, data: bytes, overwrite: bool = False) -> str:
    """Write an instant file; without ``overwrite`` it must not exist yet (atomic create)."""
    path = instant_path(meta_path, instant)
    if overwrite:
        storage.write_bytes(path, data)
    elif not storage.create_if_absent(path, data):
        raise HoodieTimelineError(f"instant file {path} already exists; another writer created this instant")
    return path


def read_avro_instant(storage: Any, meta_path: str, instant: Any, schema_name: str | None = None) -> dict[str, Any]:
    """The Avro record of an instant file (schema inferred from the file name when possible)."""
    name = _file_name(instant)
    if schema_name is None:
        schema_name = schema_for_file_name(name)
    return avro_codec.deserialize(read_instant_bytes(storage, meta_path, instant), schema_name)


def schema_for_file_name(file_name: str) -> str | None:
    """Avro schema Hudi uses for an instant file name, e.g. ``x.clean.requested`` -> HoodieCleanerPlan."""
    parts = file_name.split(".")
    if len(parts) < 2:
        return None
    action = parts[1]
    state = parts[2] if len(parts) > 2 else "completed"
    if action == "inflight":  # "<ts>.inflight" is an inflight commit (JSON)
        return None
    return avro_codec.SCHEMA_FOR_INSTANT_FILE.get((action, state))


def read_view(storage: Any, meta_path: str, instant: Any, view: type[T]) -> T:
    return view.from_bytes(read_instant_bytes(storage, meta_path, instant))


def write_view(storage: Any, meta_path: str, instant: Any, value: AvroView, overwrite: bool = False) -> str:
    return write_instant_bytes(storage, meta_path, instant, value.to_bytes(), overwrite=overwrite)


def read_compaction_plan(storage: Any, meta_path: str, instant: Any) -> CompactionPlan:
    return read_view(storage, meta_path, instant, CompactionPlan)


def read_cleaner_plan(storage: Any, meta_path: str, instant: Any) -> CleanerPlan:
    return read_view(storage, meta_path, instant, CleanerPlan)


def read_clean_metadata(storage: Any, meta_path: str, instant: Any) -> CleanMetadata:
    return read_view(storage, meta_path, instant, CleanMetadata)


def read_rollback_plan(storage: Any, meta_path: str, instant: Any) -> RollbackPlan:
    return read_view(storage, meta_path, instant, RollbackPlan)


def read_rollback_metadata(storage: Any, meta_path: str, instant: Any) -> RollbackMetadata:
    return read_view(storage, meta_path, instant, RollbackMetadata)


def read_savepoint_metadata(storage: Any, meta_path: str, instant: Any) -> SavepointMetadata:
    return read_view(storage, meta_path, instant, SavepointMetadata)


def requested_replace_from_bytes(data: bytes) -> RequestedReplaceMetadata | None:
    """A ``.replacecommit.requested`` body; None when empty (older insert_overwrite writers)."""
    if not data:
        return None
    return RequestedReplaceMetadata.from_bytes(data)


def read_requested_replace(storage: Any, meta_path: str, instant: Any) -> RequestedReplaceMetadata | None:
    return requested_replace_from_bytes(read_instant_bytes(storage, meta_path, instant))


def read_clustering_plan(storage: Any, meta_path: str, instant: Any) -> ClusteringPlan | None:
    """The clustering plan of a pending replacecommit, or None if it is not a clustering."""
    meta = read_requested_replace(storage, meta_path, instant)
    if meta is None or meta.clustering_plan is None:
        return None
    return meta.clustering_plan
