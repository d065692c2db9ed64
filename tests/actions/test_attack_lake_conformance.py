"""Attack: seeded random sequences of our actions on copies of tables Hudi 1.1 wrote (version 9,
metadata table with files, column_stats and record_index), as a user's table gets them beside
Hudi's own writers: newer updates, late updates with an older ordering value (which must lose
under the tables' EVENT_TIME_ORDERING), deletes, compaction, clustering, clean, archival and
rollback of the last write. After every action our reader, hudi-rs and a model of the rows
agree, and the metadata table still describes storage (files, record index, column stats)."""

from __future__ import annotations

import copy
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage
from tests.actions.test_hudi_1x_tables import FAST, _changed_column, _data_rows, _key, _properties
from tests.table.normalize import hudi_rs_rows, normalize_table, normalize_value
from tests.table.table_files import copy_conformance_table

#: both keep files, column_stats and record_index in their metadata table
TABLES = ["mor/v9_nonpartitioned_rollback", "cow/v9_timebasedkeygen_nonhivestyle"]
SEEDS = [int(s) for s in os.environ.get("HOODIE_ATTACK_LAKE_CONFORMANCE_SEEDS", "3").split(",")]


class HudiWrittenLake:
    def __init__(self, base: Path, seed: int) -> None:
        self.base, self.rng = str(base), random.Random(seed)
        table = HoodieTable.load(self.base)
        self.keys = table.config.record_key_fields or []
        self.ordering = _properties(base)["hoodie.table.ordering.fields"]
        stored = read_table(self.base)
        assert normalize_table(stored) == hudi_rs_rows(self.base)
        self.rows = stored.drop_columns([n for n in stored.column_names if n.startswith("_hoodie_")])
        self.column = _changed_column(stored, set(self.keys) | set(table.config.partition_fields or [])
                                      | {self.ordering})
        self.model = _data_rows(normalize_table(stored), self.keys)
        self.before: list[tuple[str, dict[str, Any]]] = []  # (write instant, model before it)
        self.cfg = {**FAST, "hoodie.datasource.write.recordkey.field": ",".join(self.keys)}
        self.step = 0

    def _pick(self, n: int) -> pa.Table:
        keys = [self._key_of(r) for r in self.rows.to_pylist()]
        # a key stored in two partitions (the time-based table) is two records: left alone
        live = [i for i, k in enumerate(keys) if k in self.model and keys.count(k) == 1]
        return self.rows.take(sorted(self.rng.sample(live, min(n, len(live)))))

    def _key_of(self, row: dict[str, Any]) -> str:
        return _key({k: normalize_value(v) for k, v in row.items()}, self.keys)

    def _write(self, batch: pa.Table, operation: str) -> None:
        before = copy.deepcopy(self.model)
        instant = write_arrow(self.base, batch, operation, self.cfg).instant
        self.before.append((instant, before))

    def update(self, newer: bool) -> None:
        batch = self._pick(self.rng.randrange(1, 4))
        self.step += 1
        values = [f"{'new' if newer else 'late'}-{self.step}-{i}" for i in range(batch.num_rows)]
        batch = batch.set_column(batch.schema.get_field_index(self.column), self.column, pa.array(values, pa.string()))
        stored = batch.column(self.ordering).to_pylist()
        ordering = [2 ** 50 + self.step if newer else v - 1 for v in stored]
        typ = batch.schema.field(self.ordering).type
        batch = batch.set_column(batch.schema.get_field_index(self.ordering), self.ordering, pa.array(ordering, typ))
        self._write(batch, "upsert")
        self.rows = pa.concat_tables([self.rows.filter(pa.array(
            [self._key_of(r) not in {self._key_of(b) for b in batch.to_pylist()} for r in self.rows.to_pylist()])),
            batch]) if newer else self.rows
        if newer:
            for row in batch.to_pylist():
                key = self._key_of(row)
                self.model[key] = {**self.model[key], self.column: normalize_value(row[self.column]),
                                   self.ordering: normalize_value(row[self.ordering])}

    def delete(self) -> None:
        batch = self._pick(1)
        self._write(batch, "delete")
        for row in batch.to_pylist():
            self.model.pop(self._key_of(row))

    def compact(self) -> None:
        if HoodieTable.load(self.base).is_mor:
            if c.schedule_compaction(HoodieTable.load(self.base), HoodieConfig(FAST), force=True).instant is not None:
                assert c.execute_pending_compactions(HoodieTable.load(self.base), LocalExecutor(),
                                                     HoodieConfig(FAST))["state"] == "completed"

    def cluster(self) -> None:
        cu.run_clustering(HoodieTable.load(self.base), HoodieConfig(FAST), LocalExecutor())

    def clean(self) -> None:
        cl.run_clean(HoodieTable.load(self.base), HoodieConfig({**FAST, cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS,
                                                                cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())

    def archive(self) -> None:
        run_archive(HoodieTable.load(self.base), HoodieConfig({**FAST, "hoodie.keep.min.commits": "2",
                                                               "hoodie.keep.max.commits": "3",
                                                               "hoodie.cleaner.commits.retained": "1"}))

    def rollback(self) -> None:
        """Roll back our last write when nothing came after it."""
        timeline = HoodieTable.load(self.base).reload_timeline()
        last = [i for i in timeline.instants if i.action in ("commit", "deltacommit", "replacecommit", "clean")]
        if not self.before or not last or last[-1].timestamp != self.before[-1][0]:
            return
        rollback_latest_or(HoodieTable.load(self.base), None, HoodieConfig(FAST))
        self.model = self.before.pop()[1]

    def check(self, step: str) -> None:
        ours = normalize_table(read_table(self.base))
        assert _data_rows(ours, self.keys) == self.model, f"our reader after {step}"
        assert hudi_rs_rows(self.base) == ours, f"hudi-rs after {step}"
        assert_metadata_describes_storage(self.base, step)

    def run(self, steps: int) -> None:
        actions = [lambda: self.update(True), lambda: self.update(False), self.delete, self.compact, self.cluster,
                   self.clean, self.archive, self.rollback]
        names = ["newer update", "late update", "delete", "compaction", "clustering", "clean", "archival", "rollback"]
        for i in range(steps):
            n = self.rng.randrange(len(actions))
            actions[n]()
            self.check(f"step {i} ({names[n]})")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", TABLES)
def test_random_sequences_on_hudi_written_tables(conformance_next: Path, tmp_path: Path, name: str, seed: int) -> None:
    HudiWrittenLake(copy_conformance_table(conformance_next, name, tmp_path), seed).run(7)
