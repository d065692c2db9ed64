"""Typed, plain-data views of Hudi's Avro plans and action metadata.

Each class mirrors one Avro record of ``avro_schemas/`` (snake_case attributes for Hudi's
camelCase fields) with ``to_avro()`` / ``from_avro()`` to the dicts :mod:`avro_codec`
encodes, and ``to_bytes()`` / ``from_bytes()`` for whole instant files. Plans are data:
planning code builds them, executors get them pickled, and the ``.requested`` file holds
them, so a retried task reads back exactly what was planned.

Path conventions are Hudi 0.14's (they matter to real Hudi reading our plans):

- compaction plan (version 2): ``dataFilePath`` and ``deltaFilePaths`` are file *names*
  inside the partition; ``partitionPath`` is relative to the base path.
- clustering plan: slice ``dataFilePath`` is the base file's full path, ``deltaFilePaths``
  are log file names (ClusteringUtils' builder).
- cleaner plan (version 2): ``filePathsToBeDeletedPerPartition`` holds full paths;
  the deprecated ``filesToBeDeletedPerPartition`` is written as an empty map.
- rollback plan: ``filesToBeDeleted`` are full paths, ``logBlocksToBeDeleted`` maps full
  log paths to sizes.

The read/write helpers at the end take ``(storage, meta_path, instant)`` where
``instant`` is an instant file name (``"20240101000000000.compaction.requested"``) or any
object with a ``file_name`` attribute; they do not depend on the timeline module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, TypeVar

from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.metadata import avro_codec

T = TypeVar("T", bound="AvroView")

#: versions Hudi 0.14 writes
COMPACTION_PLAN_VERSION = 2
CLEANER_PLAN_VERSION = 2
CLEAN_METADATA_VERSION = 2
CLUSTERING_PLAN_VERSION = 1
ROLLBACK_PLAN_VERSION = 1
ROLLBACK_METADATA_VERSION = 1
SAVEPOINT_METADATA_VERSION = 1
#: WriteOperationType.CLUSTER.name(): operationType of a clustering replacecommit.requested
CLUSTER_OPERATION = "CLUSTER"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class AvroView:
    """Generic dataclass <-> Avro dict mapping.

    ``_SCHEMA`` names the Avro record; ``_NESTED`` maps an attribute to ``(shape, view)``
    with shape ``"one"``, ``"list"``, ``"map"`` or ``"map_list"`` for attributes holding
    other views; ``_AVRO_NAMES`` overrides the camelCase default of an Avro field name.
    """

    _SCHEMA: ClassVar[str] = ""
    _NESTED: ClassVar[dict[str, tuple[str, type["AvroView"]]]] = {}
    _AVRO_NAMES: ClassVar[dict[str, str]] = {}

    @classmethod
    def _avro_name(cls, attr: str) -> str:
        return cls._AVRO_NAMES.get(attr, _camel(attr))

    def to_avro(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[self._avro_name(f.name)] = _to_avro(getattr(self, f.name))
        return out

    @classmethod
    def from_avro(cls: type[T], record: Mapping[str, Any]) -> T:
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            name = cls._avro_name(f.name)
            if name in record:
                kwargs[f.name] = _from_avro(record[name], cls._NESTED.get(f.name))
        return cls(**kwargs)

    def to_bytes(self) -> bytes:
        """The instant file content: a one-record Avro container, as Hudi writes it."""
        return avro_codec.serialize(self._SCHEMA, self.to_avro())

    @classmethod
    def from_bytes(cls: type[T], data: bytes) -> T:
        return cls.from_avro(avro_codec.deserialize(data, cls._SCHEMA))


def _to_avro(value: Any) -> Any:
    if isinstance(value, AvroView):
        return value.to_avro()
    if isinstance(value, (list, tuple)):
        return [_to_avro(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_avro(v) for k, v in value.items()}
    return value


def _from_avro(value: Any, spec: tuple[str, type[AvroView]] | None) -> Any:
    if spec is None or value is None:
        return value
    shape, view = spec
    if shape == "one":
        return view.from_avro(value)
    if shape == "list":
        return [view.from_avro(v) for v in value]
    if shape == "map":
        return {k: view.from_avro(v) for k, v in value.items()}
    if shape == "map_list":
        return {k: [None if x is None else view.from_avro(x) for x in v or []] for k, v in value.items()}
    raise ValueError(f"unknown nesting shape {shape!r}")


# ---------------------------------------------------------------------------- small records
@dataclass
class InstantInfo(AvroView):
    """HoodieInstantInfo: an instant's time and action."""

    _SCHEMA: ClassVar[str] = "HoodieInstantInfo"
    commit_time: str
    action: str


@dataclass
class ActionInstant(AvroView):
    """HoodieActionInstant: the cleaner's earliest instant to retain (state e.g. ``COMPLETED``)."""

    _SCHEMA: ClassVar[str] = "HoodieActionInstant"
    timestamp: str
    action: str
    state: str = "COMPLETED"


# ---------------------------------------------------------------------------- compaction
@dataclass
class CompactionOperation(AvroView):
    """One file slice to compact (HoodieCompactionOperation).

    ``data_file_path`` and ``delta_file_paths`` are file names (plan version 2).
    """

    _SCHEMA: ClassVar[str] = "HoodieCompactionOperation"
    base_instant_time: str | None
    file_id: str | None
    partition_path: str | None = None
    data_file_path: str | None = None
    delta_file_paths: list[str] | None = field(default_factory=list)
    metrics: dict[str, float] | None = field(default_factory=dict)
    bootstrap_file_path: str | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "baseInstantTime": self.base_instant_time,
            "deltaFilePaths": None if self.delta_file_paths is None else list(self.delta_file_paths),
            "dataFilePath": self.data_file_path,
            "fileId": self.file_id,
            "partitionPath": self.partition_path,
            "metrics": None if self.metrics is None else {k: float(v) for k, v in self.metrics.items()},
            "bootstrapFilePath": self.bootstrap_file_path,
        }

    @property
    def file_group_id(self) -> tuple[str | None, str | None]:
        return (self.partition_path, self.file_id)


@dataclass
class CompactionStrategy(AvroView):
    """HoodieCompactionStrategy (plans of log compaction carry one)."""

    _SCHEMA: ClassVar[str] = "HoodieCompactionStrategy"
    compactor_class_name: str | None = None
    strategy_params: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class CompactionPlan(AvroView):
    """HoodieCompactionPlan: content of ``.compaction.requested`` (and ``.logcompaction.requested``)."""

    _SCHEMA: ClassVar[str] = "HoodieCompactionPlan"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "operations": ("list", CompactionOperation),
        "strategy": ("one", CompactionStrategy),
    }
    operations: list[CompactionOperation] | None = field(default_factory=list)
    extra_metadata: dict[str, str] | None = None
    version: int | None = COMPACTION_PLAN_VERSION
    strategy: CompactionStrategy | None = None
    preserve_hoodie_metadata: bool | None = False

    def file_group_ids(self) -> set[tuple[str | None, str | None]]:
        return {op.file_group_id for op in self.operations or []}


# ---------------------------------------------------------------------------- clean
@dataclass
class CleanFileInfo(AvroView):
    """HoodieCleanFileInfo: a full path to delete and whether it is a bootstrap base file."""

    _SCHEMA: ClassVar[str] = "HoodieCleanFileInfo"
    file_path: str | None
    is_bootstrap_base_file: bool | None = False


@dataclass
class CleanerPlan(AvroView):
    """HoodieCleanerPlan: content of ``.clean.requested`` / ``.clean.inflight``."""

    _SCHEMA: ClassVar[str] = "HoodieCleanerPlan"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "earliest_instant_to_retain": ("one", ActionInstant),
        "file_paths_to_be_deleted_per_partition": ("map_list", CleanFileInfo),
    }
    policy: str
    earliest_instant_to_retain: ActionInstant | None = None
    last_completed_commit_timestamp: str = ""
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] | None = field(default_factory=dict)
    partitions_to_be_deleted: list[str] | None = field(default_factory=list)
    version: int | None = CLEANER_PLAN_VERSION
    #: deprecated v1 field (file names per partition); written as an empty map by v2 writers
    files_to_be_deleted_per_partition: dict[str, list[str]] | None = field(default_factory=dict)

    def paths_to_delete(self, base_path: str | None = None) -> dict[str, list[str]]:
        """Full paths to delete per partition; v1 plans (file names) need ``base_path``."""
        out: dict[str, list[str]] = {}
        for partition, infos in (self.file_paths_to_be_deleted_per_partition or {}).items():
            out.setdefault(partition, []).extend(i.file_path for i in infos if i.file_path)
        if (self.version or 1) < 2 and self.files_to_be_deleted_per_partition:
            if base_path is None:
                raise HoodieTimelineError(
                    "this cleaner plan is version 1 (file names only); pass the table base path to resolve them"
                )
            for partition, names in self.files_to_be_deleted_per_partition.items():
                prefix = f"{base_path.rstrip('/')}/{partition}" if partition else base_path.rstrip("/")
                out.setdefault(partition, []).extend(f"{prefix}/{n}" for n in names)
        return out


@dataclass
class CleanPartitionMetadata(AvroView):
    """HoodieCleanPartitionMetadata: what a clean did in one partition."""

    _SCHEMA: ClassVar[str] = "HoodieCleanPartitionMetadata"
    partition_path: str
    policy: str
    delete_path_patterns: list[str] = field(default_factory=list)
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    is_partition_deleted: bool | None = False


@dataclass
class CleanMetadata(AvroView):
    """HoodieCleanMetadata: content of a completed ``.clean``."""

    _SCHEMA: ClassVar[str] = "HoodieCleanMetadata"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "partition_metadata": ("map", CleanPartitionMetadata),
        "bootstrap_partition_metadata": ("map", CleanPartitionMetadata),
    }
    start_clean_time: str
    time_taken_in_millis: int
    total_files_deleted: int
    earliest_commit_to_retain: str
    partition_metadata: dict[str, CleanPartitionMetadata] = field(default_factory=dict)
    last_completed_commit_timestamp: str = ""
    version: int | None = CLEAN_METADATA_VERSION
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] | None = field(default_factory=dict)

# ---------------------------------------------------------------------------- clustering
@dataclass
class SliceInfo(AvroView):
    """HoodieSliceInfo: one file slice of a clustering group (full base path, log file names)."""

    _SCHEMA: ClassVar[str] = "HoodieSliceInfo"
    file_id: str | None
    partition_path: str | None = None
    data_file_path: str | None = None
    delta_file_paths: list[str] | None = field(default_factory=list)
    bootstrap_file_path: str | None = None
    version: int | None = 1

    @property
    def file_group_id(self) -> tuple[str | None, str | None]:
        return (self.partition_path, self.file_id)


@dataclass
class ClusteringGroup(AvroView):
    """HoodieClusteringGroup: slices rewritten together into ``num_output_file_groups`` groups."""

    _SCHEMA: ClassVar[str] = "HoodieClusteringGroup"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {"slices": ("list", SliceInfo)}
    slices: list[SliceInfo] | None = field(default_factory=list)
    metrics: dict[str, float] | None = field(default_factory=dict)
    num_output_file_groups: int | None = 1
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1

    def to_avro(self) -> dict[str, Any]:
        out = super().to_avro()
        if out["metrics"] is not None:
            out["metrics"] = {k: float(v) for k, v in out["metrics"].items()}
        return out


@dataclass
class ClusteringStrategy(AvroView):
    """HoodieClusteringStrategy: execution strategy class and its parameters."""

    _SCHEMA: ClassVar[str] = "HoodieClusteringStrategy"
    strategy_class_name: str | None = None
    strategy_params: dict[str, str] | None = field(default_factory=dict)
    version: int | None = 1


@dataclass
class ClusteringPlan(AvroView):
    """HoodieClusteringPlan."""

    _SCHEMA: ClassVar[str] = "HoodieClusteringPlan"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "input_groups": ("list", ClusteringGroup),
        "strategy": ("one", ClusteringStrategy),
    }
    input_groups: list[ClusteringGroup] | None = field(default_factory=list)
    strategy: ClusteringStrategy | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = CLUSTERING_PLAN_VERSION
    preserve_hoodie_metadata: bool | None = True

    def file_group_ids(self) -> set[tuple[str | None, str | None]]:
        return {s.file_group_id for g in self.input_groups or [] for s in g.slices or []}


@dataclass
class RequestedReplaceMetadata(AvroView):
    """HoodieRequestedReplaceMetadata: content of ``.replacecommit.requested``.

    Clustering writes ``operation_type="CLUSTER"`` with a plan; insert_overwrite writes
    one with every field null.
    """

    _SCHEMA: ClassVar[str] = "HoodieRequestedReplaceMetadata"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {"clustering_plan": ("one", ClusteringPlan)}
    operation_type: str | None = CLUSTER_OPERATION
    clustering_plan: ClusteringPlan | None = None
    extra_metadata: dict[str, str] | None = field(default_factory=dict)
    version: int | None = 1

    @property
    def is_clustering(self) -> bool:
        return self.clustering_plan is not None and bool(self.clustering_plan.input_groups)


# ---------------------------------------------------------------------------- rollback
@dataclass
class RollbackRequest(AvroView):
    """HoodieRollbackRequest: files to delete and/or log blocks to roll back in one file group."""

    _SCHEMA: ClassVar[str] = "HoodieRollbackRequest"
    partition_path: str
    file_id: str | None = ""
    latest_base_instant: str | None = ""
    files_to_be_deleted: list[str] = field(default_factory=list)
    log_blocks_to_be_deleted: dict[str, int] | None = field(default_factory=dict)


@dataclass
class RollbackPlan(AvroView):
    """HoodieRollbackPlan: content of ``.rollback.requested``."""

    _SCHEMA: ClassVar[str] = "HoodieRollbackPlan"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "instant_to_rollback": ("one", InstantInfo),
        "rollback_requests": ("list", RollbackRequest),
    }
    _AVRO_NAMES: ClassVar[dict[str, str]] = {"rollback_requests": "RollbackRequests"}
    instant_to_rollback: InstantInfo | None
    rollback_requests: list[RollbackRequest] | None = field(default_factory=list)
    version: int | None = ROLLBACK_PLAN_VERSION


@dataclass
class RollbackPartitionMetadata(AvroView):
    """HoodieRollbackPartitionMetadata: what a rollback did in one partition."""

    _SCHEMA: ClassVar[str] = "HoodieRollbackPartitionMetadata"
    partition_path: str
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    rollback_log_files: dict[str, int] | None = field(default_factory=dict)
    log_files_from_failed_commit: dict[str, int] | None = field(default_factory=dict)


@dataclass
class RollbackMetadata(AvroView):
    """HoodieRollbackMetadata: content of a completed ``.rollback``."""

    _SCHEMA: ClassVar[str] = "HoodieRollbackMetadata"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "partition_metadata": ("map", RollbackPartitionMetadata),
        "instants_rollback": ("list", InstantInfo),
    }
    start_rollback_time: str
    time_taken_in_millis: int
    total_files_deleted: int
    commits_rollback: list[str]
    partition_metadata: dict[str, RollbackPartitionMetadata] = field(default_factory=dict)
    version: int | None = ROLLBACK_METADATA_VERSION
    instants_rollback: list[InstantInfo] = field(default_factory=list)

# ---------------------------------------------------------------------------- savepoint
@dataclass
class SavepointPartitionMetadata(AvroView):
    """HoodieSavepointPartitionMetadata: base files kept by a savepoint in one partition."""

    _SCHEMA: ClassVar[str] = "HoodieSavepointPartitionMetadata"
    partition_path: str
    savepoint_data_file: list[str] = field(default_factory=list)


@dataclass
class SavepointMetadata(AvroView):
    """HoodieSavepointMetadata: content of ``.savepoint``."""

    _SCHEMA: ClassVar[str] = "HoodieSavepointMetadata"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {"partition_metadata": ("map", SavepointPartitionMetadata)}
    savepointed_by: str
    savepointed_at: int
    comments: str
    partition_metadata: dict[str, SavepointPartitionMetadata] = field(default_factory=dict)
    version: int | None = SAVEPOINT_METADATA_VERSION

# ---------------------------------------------------------------------------- restore
@dataclass
class RestorePlan(AvroView):
    """HoodieRestorePlan: content of ``.restore.requested`` (instants to roll back, newest first)."""

    _SCHEMA: ClassVar[str] = "HoodieRestorePlan"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {"instants_to_rollback": ("list", InstantInfo)}
    instants_to_rollback: list[InstantInfo] = field(default_factory=list)
    version: int | None = 1


@dataclass
class RestoreMetadata(AvroView):
    """HoodieRestoreMetadata: content of a completed ``.restore``."""

    _SCHEMA: ClassVar[str] = "HoodieRestoreMetadata"
    _NESTED: ClassVar[dict[str, tuple[str, type[AvroView]]]] = {
        "hoodie_restore_metadata": ("map_list", RollbackMetadata),
        "restore_instant_info": ("list", InstantInfo),
    }
    start_restore_time: str
    time_taken_in_millis: int
    instants_to_rollback: list[str] = field(default_factory=list)
    hoodie_restore_metadata: dict[str, list[RollbackMetadata | None]] = field(default_factory=dict)
    version: int | None = 1
    restore_instant_info: list[InstantInfo] = field(default_factory=list)


