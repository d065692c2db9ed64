"""Running a deferrable operator's deferral by hand: defer, rebuild the trigger as the
triggerer does, and take its first event."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
from airflow_hoodie.triggers.write import HoodieWriteTrigger


class FakeTaskInstance(types.SimpleNamespace):
    """A task instance that keeps what the operator pushes to XCom."""

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def deferred_upsert(tmp_path: Any, source: Any, spark_conn_id: str) -> tuple[Any, dict, dict, str, str, dict]:
    """(operator, context, first trigger event, trigger path, method name, trigger kwargs)."""
    op = HoodieUpsertOperator(task_id="upsert", base_path=str(tmp_path / "t"), table_name="t", source=str(source),
                              operation="insert", spark_conn_id=spark_conn_id, deferrable=True, poll_interval=1,
                              hoodie_conf={"hoodie.datasource.write.recordkey.field": "id",
                                           "hoodie.datasource.write.partitionpath.field": ""})
    context = {"ti": FakeTaskInstance(dag_id="d", run_id="r", task_id="upsert", map_index=-1, pushed={})}
    with pytest.raises(TaskDeferred) as info:
        op.execute(context)
    path, kwargs = info.value.trigger.serialize()
    trigger = HoodieWriteTrigger(**kwargs)  # as the triggerer rebuilds it

    async def first_event():
        return await asyncio.wait_for(trigger.run().__anext__(), 240)

    return op, context, asyncio.run(first_event()).payload, path, info.value.method_name, kwargs
