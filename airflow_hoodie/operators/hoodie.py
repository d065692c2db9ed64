"""One thin operator per ``spark_jobs/*.py`` script, on table versions 6, 8 and 9 alike.

Each operator only states which job it runs and which arguments the job takes; everything
else (spark-submit through :class:`HoodieHook`, XCom, deferral, Asset events, nothing to
do) is :class:`~airflow_hoodie.operators.hoodie_base.HoodieBaseOperator`'s. This module is
the operators' import path: the base operator and its helpers are importable from here too.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from airflow_hoodie.actions.clustering import pending_clustering_instants
from airflow_hoodie.actions.compaction import pending_compaction_instants
from airflow_hoodie.operators.hoodie_base import (
    ASSET_EXTRA_KEYS,
    NOTHING_TO_DO_SKIP,
    NOTHING_TO_DO_SUCCESS,
    HoodieBaseOperator,
    is_templated,
    summary_table,
)
from airflow_hoodie.settings.indexer import parse_index_types

__all__ = [
    "ASSET_EXTRA_KEYS",
    "NOTHING_TO_DO_SKIP",
    "NOTHING_TO_DO_SUCCESS",
    "HoodieArchiveOperator",
    "HoodieBaseOperator",
    "HoodieCleanOperator",
    "HoodieClusteringOperator",
    "HoodieCompactionExecuteOperator",
    "HoodieCompactionPlanOperator",
    "HoodieIndexerOperator",
    "HoodieRollbackOperator",
    "HoodieSavepointOperator",
    "HoodieUpsertOperator",
    "summary_table",
]


class HoodieUpsertOperator(HoodieBaseOperator):
    """Write a batch (``spark_jobs/upsert.py``): insert, upsert, bulk_insert, delete, insert_overwrite...

    :param table_name: ``hoodie.table.name`` (needed when the first write creates the table).
    :param source: path or URI of the batch.
    :param source_format: parquet, json, csv or orc.
    :param operation: Hudi write operation (default ``upsert``).
    :param source_storage_options: pyarrow filesystem options of a source on another bucket or
        store (default: the table's ``storage_options`` and connection, as a landing zone on the
        lake's own store needs); secrets reach the job in its environment only.
    """

    job = "upsert"
    writes_data = True
    records_write_id = True
    template_fields: Sequence[str] = (*HoodieBaseOperator.template_fields, "table_name", "source",
                                      "source_format", "operation", "source_storage_options")

    def __init__(self, *, table_name: str, source: str, source_format: str = "parquet",
                 operation: str = "upsert", source_storage_options: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table_name = table_name
        self.source = source
        self.source_format = source_format
        self.operation = operation
        self.source_storage_options = dict(source_storage_options) if source_storage_options else None

    def hook_kwargs(self) -> dict[str, Any]:
        return {"source_storage_options": self.source_storage_options}

    def lineage_inputs(self, base_uri: str) -> tuple[str, ...]:
        return (self.source,)

    def check_before_submit(self, context: Any) -> None:
        started = time.monotonic()
        if self._hook.check_write(self.source, self.source_format, self.operation, self.table_name,
                                  props_file=self.props_file):
            self.log.info("Batch checked against the table in %.1f s (schema from the source's footers)",
                          time.monotonic() - started)

    def job_args(self, context: Any) -> list[str]:
        return ["--table-name", self.table_name, "--source", self.source,
                "--source-format", self.source_format, "--operation", self.operation]


class HoodieCompactionPlanOperator(HoodieBaseOperator):
    """Schedule a compaction (``spark_jobs/compaction_plan.py``); XCom ``instant`` is the plan."""

    job = "compaction_plan"


class HoodieCompactionExecuteOperator(HoodieBaseOperator):
    """Execute a pending compaction (``spark_jobs/compaction_execute.py``).

    :param instant_time: the compaction to run. Default: the instant planned by the
        upstream :class:`HoodieCompactionPlanOperator` (its XCom); when none was handed
        over (nothing planned this run, or no plan task upstream), the earliest pending plan
        on the timeline runs, as Hudi's HoodieCompactor does, so a plan left by a failed
        earlier run is executed rather than skipped.
    :param plan_task_id: take the instant from this task's XCom instead of looking upstream.
    """

    job = "compaction_execute"
    writes_data = True
    records_write_id = True
    template_fields: Sequence[str] = (*HoodieBaseOperator.template_fields, "instant_time")

    def __init__(self, *, instant_time: str | None = None, plan_task_id: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.instant_time = instant_time
        self.plan_task_id = plan_task_id

    def _plan_task_ids(self) -> list[str]:
        if self.plan_task_id:
            return [self.plan_task_id]
        return [t.task_id for t in self.upstream_list if isinstance(t, HoodieCompactionPlanOperator)]

    def resolve_instant(self, context: Any) -> str | None:
        """The plan handed over (argument or upstream XCom), or None for "the pending ones"."""
        if self.instant_time:
            return str(self.instant_time)
        ti = context["ti"]
        for task_id in self._plan_task_ids():
            planned = ti.xcom_pull(task_ids=task_id, key="return_value")
            if isinstance(planned, Mapping) and planned.get("instant"):
                return str(planned["instant"])
        return None

    def write_id(self, context: Any) -> str | None:
        """None when nothing is pending in cluster deploy mode (see :meth:`_watchable`)."""
        write_id = super().write_id(context)
        if write_id is None or self.resolve_instant(context) is not None:
            return write_id
        return write_id if self._watchable(write_id, pending_compaction_instants) else None

    def job_args(self, context: Any) -> list[str]:
        instant = self.resolve_instant(context)
        if instant is None:
            self.log.info("No compaction plan handed to this task; executing the earliest pending plan on "
                          "the timeline")
            return []
        return ["--instant-time", instant]


class HoodieClusteringOperator(HoodieBaseOperator):
    """Cluster (``spark_jobs/clustering.py``): schedule, execute or scheduleAndExecute (default).

    ``execute`` without ``instant_time`` runs the earliest pending clustering plan.
    """

    job = "clustering"
    writes_data = True
    records_write_id = True
    template_fields: Sequence[str] = (*HoodieBaseOperator.template_fields, "mode", "instant_time")
    MODES = ("schedule", "execute", "scheduleAndExecute")

    def __init__(self, *, mode: str = "scheduleAndExecute", instant_time: str | None = None,
                 **kwargs: Any) -> None:
        if mode not in self.MODES and not is_templated(mode):
            raise ValueError(f"mode must be one of {self.MODES}, not {mode!r}")
        if mode == "schedule" and kwargs.get("emit_asset") is None:
            kwargs["emit_asset"] = False  # a plan changes no data
        super().__init__(**kwargs)
        self.mode = mode
        self.instant_time = instant_time

    def write_id(self, context: Any) -> str | None:
        """Executing modes commit a replacecommit with the identity; a plan carries none."""
        if self.mode == "schedule":
            return None
        write_id = super().write_id(context)
        if write_id is None or self.mode != "execute" or self.instant_time:
            return write_id
        return write_id if self._watchable(write_id, pending_clustering_instants) else None

    def job_args(self, context: Any) -> list[str]:
        args = ["--mode", self.mode]
        if self.instant_time:
            args += ["--instant-time", str(self.instant_time)]
        return args


class HoodieCleanOperator(HoodieBaseOperator):
    """Clean old file versions (``spark_jobs/clean.py``) under ``hoodie.cleaner.*``."""

    job = "clean"


class HoodieArchiveOperator(HoodieBaseOperator):
    """Archive old instants (``spark_jobs/archive.py``) under ``hoodie.keep.*``."""

    job = "archive"


class HoodieRollbackOperator(HoodieBaseOperator):
    """Roll back a write (``spark_jobs/rollback.py --instant-time T``)."""

    job = "rollback"
    writes_data = True
    template_fields: Sequence[str] = (*HoodieBaseOperator.template_fields, "instant_time")

    def __init__(self, *, instant_time: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.instant_time = instant_time

    def job_args(self, context: Any) -> list[str]:
        return ["--instant-time", str(self.instant_time)]


class HoodieSavepointOperator(HoodieBaseOperator):
    """Create (or with ``delete=True`` remove) a savepoint (``spark_jobs/savepoint.py``)."""

    job = "savepoint"
    template_fields: Sequence[str] = (*HoodieBaseOperator.template_fields, "instant_time")

    def __init__(self, *, instant_time: str, delete: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.instant_time = instant_time
        self.delete = delete

    def job_args(self, context: Any) -> list[str]:
        args = ["--instant-time", str(self.instant_time)]
        if self.delete:
            args.append("--delete")
        return args


class HoodieIndexerOperator(HoodieBaseOperator):
    """Build metadata-table indexes of an existing table (``spark_jobs/indexer.py``, Hudi's
    HoodieIndexer): ``index_types`` among RECORD_INDEX, SECONDARY_INDEX (with ``index_name`` and
    ``index_column``), COLUMN_STATS, BLOOM_FILTERS, PARTITION_STATS; ``mode`` schedule, execute
    or scheduleAndExecute (default). An index changes no data, so no Asset event by default.
    """

    job = "indexer"
    template_fields: Sequence[str] = (*HoodieBaseOperator.template_fields, "mode", "index_types", "index_name",
                                      "index_column", "instant_time")
    MODES = ("schedule", "execute", "scheduleAndExecute")

    def __init__(self, *, index_types: str | Sequence[str], mode: str = "scheduleAndExecute",
                 index_name: str | None = None, index_column: str | None = None, instant_time: str | None = None,
                 **kwargs: Any) -> None:
        if mode not in self.MODES and not is_templated(mode):
            raise ValueError(f"mode must be one of {self.MODES}, not {mode!r}")
        index_types = index_types if isinstance(index_types, str) else ",".join(index_types)
        if not is_templated(index_types):
            parse_index_types(index_types)  # an index type the job cannot build fails the DAG, not the run
        super().__init__(**kwargs)
        self.mode = mode
        self.index_types = index_types
        self.index_name = index_name
        self.index_column = index_column
        self.instant_time = instant_time

    def job_args(self, context: Any) -> list[str]:
        args = ["--mode", self.mode, "--index-types", str(self.index_types)]
        for flag, value in (("--index-name", self.index_name), ("--index-column", self.index_column),
                            ("--instant-time", self.instant_time)):
            if value:
                args += [flag, str(value)]
        return args
