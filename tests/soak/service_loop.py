"""The table-services loop shared by the soak test (tests/soak/test_soak.py), the archival
regression loops (tests/actions/test_attack_archival_loops.py) and the hour-long soak script
(benchmarks/soak.py): upserts, clean, compaction and archival through the in-process API, and
after every step three readers checked against a plain dict model -- our reader listing
through the metadata table, our reader listing storage, and hudi-rs -- plus the metadata
table's ``files`` partition against storage.

One home for the loop, so that what CI runs for a minute is what a person runs for an hour.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.files_listing import (
    files_partition_ready,
    load_files_listing,
)
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.lsm_timeline import snapshot_files
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.table.table_files import storage_listing


class ReadersDisagree(AssertionError):
    """A reader returned rows other than the model's after a step (the soak's failure)."""


def loop_config(version: int, table_type: str, **extra: str) -> dict[str, str]:
    """Write settings of a loop table: Hudi's defaults for everything not in ``extra``
    (clean, archival and compaction retention included)."""
    cfg = {"hoodie.table.name": "soak", "hoodie.datasource.write.table.type": table_type,
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.precombine.field": "ts",
           # one writer: no wait for Hudi 1.x's clock skew per instant
           "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    if table_type == "MERGE_ON_READ":
        # updates go to log files (else each small group is rewritten): compaction has work
        cfg["hoodie.parquet.small.file.limit"] = "0"
    cfg.update(extra)
    return cfg


@dataclass
class StepRecord:
    """What one step did and how long it and its checks took."""

    round: int
    step: str
    instant: str | None
    seconds: float
    check_seconds: float


@dataclass
class ServiceLoop:
    """One table, its model, and the steps of the loop; :meth:`check` after each step."""

    base: str
    version: int
    table_type: str
    extra: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    new_keys: int = 40
    updated_keys: int = 30
    hudi_rs: bool = True
    model: dict[str, int] = field(default_factory=dict)
    records: list[StepRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cfg = loop_config(self.version, self.table_type, **self.extra)
        self.rng = random.Random(self.seed)
        self.next_key = 0
        self.ts = 0
        self.round = 0

    # ------------------------------------------------------------------ steps
    def conf(self) -> HoodieConfig:
        return HoodieConfig(self.cfg)

    def load(self) -> HoodieTable:
        return HoodieTable.load(self.base)

    def upsert(self) -> str | None:
        """New keys and updates of known ones, over two partitions (a key stays in its own)."""
        self.ts += 1
        ids = [f"k{self.next_key + i:06d}" for i in range(self.new_keys)]
        self.next_key += self.new_keys
        known = sorted(self.model)
        ids += self.rng.sample(known, min(len(known), self.updated_keys))
        values = [self.ts * 1_000_000 + self.rng.randrange(1_000_000) for _ in ids]
        batch = pa.table({"id": ids, "p": [f"p{int(k[1:]) % 2}" for k in ids],
                          "ts": pa.array([self.ts] * len(ids), pa.int64()), "v": pa.array(values, pa.int64())})
        instant = write_arrow(self.base, batch, "upsert", self.cfg).instant
        self.model.update(zip(ids, values))
        return instant

    def clean(self) -> str | None:
        return cl.run_clean(self.load(), self.conf(), LocalExecutor()).get("instant")

    def compact(self) -> str | None:
        """Schedule (the trigger decides, as Hudi's inline compaction does) and execute."""
        if self.table_type != "MERGE_ON_READ":
            return None
        planned = c.schedule_compaction(self.load(), self.conf())
        if planned.instant is None:
            return None
        c.execute_pending_compactions(self.load(), LocalExecutor(), self.conf())
        return planned.instant.timestamp

    def archive(self) -> str | None:
        """The newest instant archived, or None when the rules archived nothing."""
        return run_archive(self.load(), self.conf()).get("instant")

    # ------------------------------------------------------------------ checks
    def check(self, step: str) -> None:
        """Every reader returns the model's rows; the metadata table lists what storage holds."""
        expected = dict(sorted(self.model.items()))
        ours = read_table(self.base, metadata_enable=True)
        self._agree(ours, expected, "our reader (metadata table)", step)
        self._agree(read_table(self.base, metadata_enable=False), expected, "our reader (storage listing)", step)
        if self.hudi_rs and normalize_table(ours) != hudi_rs_rows(self.base):
            raise ReadersDisagree(f"hudi-rs reads {self.base} differently from ours after {step}")
        table = self.load()
        self._check_history(table, step)
        if files_partition_ready(table.config):
            listed = load_files_listing(table.storage, table.base_path, table.timeline).files
            on_storage = storage_listing(self.base)
            got = {p: sorted(f) for p, f in listed.items() if f}
            want = {p: sorted(f) for p, f in on_storage.items() if f}
            if got != want:
                ghosts = sorted(f"{p}/{n}" for p, names in got.items() for n in names if n not in want.get(p, []))
                lost = sorted(f"{p}/{n}" for p, names in want.items() for n in names if n not in got.get(p, []))
                raise ReadersDisagree(f"the metadata table's files partition after {step} lists {ghosts} that "
                                      f"storage does not hold and misses {lost}")

    def _check_history(self, table: HoodieTable, step: str) -> None:
        """Version 8+: no instant twice in the LSM history of the table or of its metadata
        table, and none both archived and active (read with pyarrow from the manifests)."""
        if self.version < 8:
            return
        for folder in (os.path.join(self.base, ".hoodie"), os.path.join(self.base, ".hoodie", "metadata", ".hoodie")):
            history = os.path.join(folder, "timeline", "history")
            if not os.path.isdir(history):
                continue
            archived: list[str] = []
            for name in snapshot_files(table.storage, history):
                archived += pq.read_table(os.path.join(history, name), columns=["instantTime"]).column(0).to_pylist()
            twice = sorted({t for t in archived if archived.count(t) > 1})
            active = {n.split(".")[0].split("_")[0] for n in os.listdir(os.path.join(folder, "timeline"))
                      if n[0].isdigit()}
            both = sorted(active & set(archived))
            if twice or both:
                raise ReadersDisagree(f"the LSM history {history} after {step} holds {twice} twice and {both} "
                                      "that are still on the active timeline")

    def _agree(self, t: pa.Table, expected: dict[str, int], reader: str, step: str) -> None:
        got = dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist())) if t.num_rows else {}
        if got != expected:
            missing = sorted(set(expected) - set(got))
            wrong = sorted(k for k in expected if k in got and got[k] != expected[k])
            extra = sorted(set(got) - set(expected))
            raise ReadersDisagree(
                f"{reader} after {step}: {len(got)} rows for {len(expected)} keys; {len(missing)} missing "
                f"{missing[:5]}, {len(wrong)} with an old value {wrong[:5]}, {len(extra)} unknown {extra[:5]}")
        if t.num_rows != len(expected):
            raise ReadersDisagree(f"{reader} after {step}: {t.num_rows} rows for {len(expected)} keys (duplicates)")

    def run_step(self, name: str, step: Callable[[], str | None]) -> None:
        t0 = time.perf_counter()
        instant = step()
        t1 = time.perf_counter()
        self.check(f"round {self.round} {name}")
        self.records.append(StepRecord(self.round, name, instant, t1 - t0, time.perf_counter() - t1))

    def run_round(self, steps: list[str]) -> None:
        """One round: each named step (a method of this loop), checked after each."""
        for name in steps:
            self.run_step(name, getattr(self, name))
        self.round += 1

    def summary(self) -> dict[str, Any]:
        """Counts and timings of what ran: what the soak script reports."""
        tl = self.load().reload_timeline()
        by_step: dict[str, list[float]] = {}
        for r in self.records:
            by_step.setdefault(r.step, []).append(r.seconds)
        archived = 0
        history = os.path.join(self.base, ".hoodie", "archived" if self.version < 8 else "timeline/history")
        if os.path.isdir(history):
            archived = len(os.listdir(history))
        return {"version": self.version, "table_type": self.table_type, "rounds": self.round,
                "keys": len(self.model), "active_instants": len(tl.instants), "archive_files": archived,
                "steps": {k: {"count": len(v), "seconds": round(sum(v), 3),
                              "did_work": sum(1 for r in self.records if r.step == k and r.instant)}
                          for k, v in by_step.items()},
                "check_seconds": round(sum(r.check_seconds for r in self.records), 3)}


#: one round of the soak: Hudi's own sequence of inline services after two writes
SOAK_ROUND = ["upsert", "upsert", "clean", "compact", "archive"]


def soak(base_dir: str, version: int, table_type: str = "MERGE_ON_READ", rounds: int | None = None,
         seconds: float | None = None, seed: int = 0, **loop_args: Any) -> ServiceLoop:
    """Run :data:`SOAK_ROUND` with Hudi's default retention settings on a fresh table under
    ``base_dir`` for ``rounds`` rounds or until ``seconds`` passed (whichever comes first);
    raises :class:`ReadersDisagree` at the first step a reader or the metadata table is wrong."""
    loop = ServiceLoop(os.path.join(base_dir, f"v{version}_{table_type.lower()}"), version, table_type,
                       seed=seed, **loop_args)
    deadline = time.monotonic() + seconds if seconds is not None else None
    while (rounds is None or loop.round < rounds) and (deadline is None or time.monotonic() < deadline):
        loop.run_round(SOAK_ROUND)
    return loop
