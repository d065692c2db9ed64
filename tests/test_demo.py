"""The demo shows, per step, what the jobs did (progress lines, nothing-to-do reasons, results)."""

from __future__ import annotations

from airflow_hoodie.demo import _what_happened

LOG = """\
2026-11-24T14:02:16Z [info     ] Spark-Submit cmd: spark-submit --master local[*] ... [airflow.task.hooks.h] loc=s.py:737
2026-11-24T14:02:20Z [info     ] hoodie: indexing 200 records against 3 files: 100 to existing file groups, 100 new [airflow.task.hooks.h] loc=s.py:9
2026-11-24T14:02:21Z [info     ] hoodie: committed deltacommit 20261124140220123 in 4.2 s [airflow.task.hooks.h] loc=s.py:9
2026-11-24T14:02:22Z [info     ] compaction_plan: nothing to do on /t: no file slice has log files [airflow.task.operators.o]
| instant       | 20261124140220123
| inserts       | 100
26/11/24 14:02:19 WARN Utils: Your hostname resolves to a loopback address
"""


def test_demo_shows_progress_nothing_to_do_and_results_only():
    assert _what_happened(LOG) == [
        "hoodie: indexing 200 records against 3 files: 100 to existing file groups, 100 new",
        "hoodie: committed deltacommit 20261124140220123 in 4.2 s",
        "compaction_plan: nothing to do on /t: no file slice has log files",
        "| instant       | 20261124140220123",
        "| inserts       | 100",
    ]
