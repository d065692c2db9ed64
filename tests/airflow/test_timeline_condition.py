"""The conditions sensors and triggers evaluate, on instant views (no Airflow needed)."""

from __future__ import annotations

import pytest

from airflow_hoodie.triggers.timeline_condition import (
    InstantView,
    evaluate,
    instant_condition,
    no_pending_condition,
    pending_services,
)

VIEWS = [
    InstantView("001", "deltacommit", "deltacommit", "COMPLETED"),
    InstantView("002", "commit", "compaction", "COMPLETED"),
    InstantView("003", "replacecommit", "clustering", "INFLIGHT"),
    InstantView("004", "deltacommit", "deltacommit", "REQUESTED"),
]


def test_an_instant_condition_returns_the_newest_match_and_every_match():
    out = evaluate(instant_condition(actions=["deltacommit"]), VIEWS)
    assert out["instant"] == "001" and out["matched"] == ["001"]
    out = evaluate(instant_condition(actions=["deltacommit"], state="requested"), VIEWS)
    assert out["instant"] == "004" and out["matched"] == ["001", "004"]
    assert evaluate(instant_condition(actions=["compaction"], after="002"), VIEWS) is None
    assert evaluate(instant_condition(instant_time="002"), VIEWS)["kind"] == "compaction"


def test_a_completed_compaction_is_not_an_ingest_commit():
    assert evaluate(instant_condition(actions=["commit"]), VIEWS)["instant"] == "002"
    assert evaluate(instant_condition(actions=["deltacommit"], after="001"), VIEWS) is None


def test_no_pending_waits_while_a_service_is_pending():
    cond = no_pending_condition(["clustering"])
    assert evaluate(cond, VIEWS) is None
    assert [v.timestamp for v in pending_services(VIEWS, ["clustering", "compaction"])] == ["003"]
    done = evaluate(no_pending_condition(["compaction"]), VIEWS)
    assert done == {"pending": [], "services": ["compaction"], "instant": "002", "completion_time": None,
                    "checkpoint": "002"}


def test_no_table_means_wait_and_bad_input_fails_early():
    assert evaluate(instant_condition(), None) is None
    with pytest.raises(ValueError, match="Unknown table services"):
        no_pending_condition(["cleaning"])
    with pytest.raises(ValueError, match="Unknown instant state"):
        instant_condition(state="done")
