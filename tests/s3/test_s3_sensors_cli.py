"""The sensors, their trigger and the CLI on an ``s3://`` table (moto's server). The sensors
find the table through an Airflow ``hoodie`` connection whose login and password are the
access key and secret (the amazon provider's convention); the CLI takes the endpoint as a
storage option and the credentials from the standard AWS environment, never its command line."""

from __future__ import annotations

import asyncio
import io
import json
import threading

import pyarrow as pa
import pytest

import tests.airflow.conftest  # noqa: F401 - a throwaway AIRFLOW_HOME before airflow loads
from airflow_hoodie.actions.write import write_arrow
from tests.s3.conftest import S3Place

FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}
CFG = {**FAST, "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
       "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
       "hoodie.table.name": "sensed", "hoodie.write.table.version": "9"}


def _write(s3: S3Place, uri: str, ts: int) -> str:
    rows = pa.table({"id": [f"k{ts}"], "p": ["p0"], "ts": [ts], "v": [f"v{ts}"]})
    return write_arrow(uri, rows, "upsert", CFG, storage_options=s3.storage_options).instant


@pytest.fixture
def connection(s3: S3Place, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_S3", json.dumps({
        "conn_type": "hoodie", "login": "testing", "password": "testing",
        "extra": {"base_path": s3.uri("sensed"), "storage_options": s3.storage_options}}))
    return "hoodie_s3"


def test_instant_sensor_and_its_trigger_on_s3(s3: S3Place, connection: str) -> None:
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_hoodie.sensors.hoodie import HoodieInstantSensor, HoodiePendingServiceSensor
    from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger
    from tests.airflow.test_sensors import ctx

    uri = s3.uri("sensed")
    first = _write(s3, uri, 1)
    sensor = HoodieInstantSensor(task_id="s", hoodie_conn_id=connection, actions=["deltacommit"])
    assert sensor.poke(ctx()).xcom_value["instant"] == first
    newer = HoodieInstantSensor(task_id="s", hoodie_conn_id=connection, actions=["deltacommit"], after=first)
    assert newer.poke(ctx()) is False
    assert HoodiePendingServiceSensor(task_id="p", hoodie_conn_id=connection).poke(ctx())

    deferring = HoodieInstantSensor(task_id="d", hoodie_conn_id=connection, actions=["deltacommit"], after=first,
                                    deferrable=True, poke_interval=0.1, timeout=60)
    with pytest.raises(TaskDeferred) as info:
        deferring.execute(ctx())
    kwargs = info.value.trigger.serialize()[1]
    assert "testing" not in json.dumps(kwargs["storage_options"])  # the secret stays in the connection
    trigger = HoodieTimelineTrigger(**kwargs)
    written: list[str] = []

    async def scenario():  # noqa: ANN202
        events = trigger.run()
        first_event = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.3)
        assert not first_event.done()
        thread = threading.Thread(target=lambda: written.append(_write(s3, uri, 2)))
        thread.start()
        event = await asyncio.wait_for(first_event, 60)
        await asyncio.to_thread(thread.join)
        return event

    event = asyncio.run(scenario())
    assert event.payload["status"] == "success" and event.payload["instant"] == written[0]
    assert newer.poke(ctx()).xcom_value["instant"] == written[0]


def test_cli_reads_an_s3_table(s3: S3Place) -> None:
    from airflow_hoodie.cli import main

    uri = s3.uri("cli")
    instants = [_write(s3, uri, 1), _write(s3, uri, 2)]
    endpoint = [f"--storage-option=endpoint_override={s3.endpoint}", "--storage-option=region=us-east-1"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["timeline", uri, "--json", *endpoint], out=out, err=err) == 0, err.getvalue()
    listed = json.loads(out.getvalue())
    text = json.dumps(listed)
    assert all(i in text for i in instants)
    out = io.StringIO()
    assert main(["read", uri, "--json", *endpoint], out=out, err=err) == 0, err.getvalue()
    rows = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]  # one JSON row a line
    assert sorted(r["id"] for r in rows) == ["k1", "k2"]
    out = io.StringIO()
    assert main(["slices", uri, "--json", *endpoint], out=out, err=err) == 0, err.getvalue()
    assert "p0" in out.getvalue()
