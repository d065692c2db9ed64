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


def test_a_step_shows_its_progress_as_it_happens_and_a_line_at_least_every_heartbeat(tmp_path, monkeypatch):
    """The demo used to be silent for 100 to 120 s per step (issue 20): it printed a step's
    lines only once the step ended."""
    import sys
    import time

    from airflow_hoodie import demo

    printed: list[tuple[float, str]] = []
    monkeypatch.setattr(demo, "print", lambda *a, **k: printed.append((time.monotonic(), " ".join(map(str, a)))),
                        raising=False)
    step = ("import time; print('hoodie: indexing 1 records', flush=True); time.sleep(3); "
            "print('hoodie: committed commit 1 in 3.0 s', flush=True)")
    started = time.monotonic()
    demo._run([sys.executable, "-c", step], {}, tmp_path, "step", heartbeat=0.5)
    ended = time.monotonic()
    texts = [t for _, t in printed]
    assert texts[0] == "  step ..." and texts[-1].startswith("  step") and texts[-1].split()[-2] == "ok"
    progress = [(at, t.strip()) for at, t in printed if "hoodie:" in t]
    assert [t for _, t in progress] == ["hoodie: indexing 1 records", "hoodie: committed commit 1 in 3.0 s"]
    assert progress[0][0] < ended - 2  # shown while the step still ran, not at its end
    assert any("still running" in t for t in texts)
    gaps = [b - a for a, b in zip([started] + [at for at, _ in printed], [at for at, _ in printed] + [ended])]
    assert max(gaps) < 0.5 + 0.5  # the heartbeat plus one poll and some slack
    assert demo.HEARTBEAT_SECONDS <= 30  # the promise: a line at least every 30 s


def test_the_report_spells_states_as_hudi_does(tmp_path, capsys):
    import pyarrow as pa

    from airflow_hoodie import demo
    from airflow_hoodie.actions.write import write_arrow

    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": ["a"], "ts": [1]}), "upsert",
                {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                 "hoodie.datasource.write.partitionpath.field": ""})
    demo._report(base)
    timeline = [line for line in capsys.readouterr().out.splitlines() if line.strip().endswith("COMPLETED")]
    assert len(timeline) == 1 and " commit " in timeline[0]
