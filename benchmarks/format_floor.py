"""Benchmark (not a test): our bulk_insert and upsert against the Python format floor.

    .venv/bin/python benchmarks/format_floor.py [--rows 1000000] [--batch 100000] [--repeat 3] [--profile] [--skip-no-mdt]

The floor is what any Python writer of these Hudi files must pay: pyarrow reading the files
a write touches and writing the same output files — the same number of files with the same
rows each, the five meta columns computed with pyarrow compute, the bloom filter of the keys
(built and serialized by this package's own filter class, so the floor pays the same bloom
cost) and the key range in the footer, the same codec and level, page size, row group size and
dictionary choices as the files our writer wrote. No timeline, markers, index lookup,
metadata table or planning: the floor takes its plan (files and their row counts) from an
untimed run of ours.

- bulk_insert of ``--rows`` rows (benchmarks/upsert.py's rows) into a new COPY_ON_WRITE
  table through the in-process write flow (``write_arrow``), against: record keys cast from
  ``id``, rows sorted by (partition, key) as our bulk_insert lays them out, each file's slice
  stamped with meta columns, bloom filter built, file written.
- upsert of ``--batch`` records (20% updates) into that table, against: per partition, the
  base files our upsert rewrote (from its commit's write stats) read with pyarrow, old rows
  whose key the batch holds dropped, the updates and the partition's inserts stamped and
  appended, the old file's footer filter extended with the new keys (as ours does), and the
  same output files written (new insert files too, if ours wrote any).

Ours runs with the metadata table on (the default) and, unless ``--skip-no-mdt``, off too.
Runs alternate in one process (ours, ours without the metadata table, floor), so all see the
same load; each figure is the median of ``--repeat`` runs of wall and CPU (``process_time``)
seconds; the floor and ours use the same number of threads (one per CPU). The check before
the runs asserts the floor's files have our files' rows, columns, row groups and size. The
floor's per-phase thread seconds are reported; ``--profile`` prints, per step, CPU-time
cProfile top entries of one run of ours and one of the floor, each on a single thread (the
file group writes and our bloom filter on the profiled thread). Writes
``benchmarks/out/format_floor.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from functools import partial
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from benchmarks.upsert import table_and_batch  # noqa: E402

CT, SEQ, RK, PP, FN = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                       "_hoodie_partition_path", "_hoodie_file_name")
META = (CT, SEQ, RK, PP, FN)
ONE_VALUE = (CT, PP, FN)


def config(mdt: bool) -> dict[str, str]:
    return {"hoodie.table.name": "bench", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
            "hoodie.metadata.enable": str(mdt).lower()}


class Phases:
    """Thread seconds of the floor's phases, summed over its worker threads."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def timed(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with self._lock:
                self.seconds[name] += time.perf_counter() - t0


class FileSpec:
    """What the floor must write for one output file: taken from our commit's write stats,
    and the encoding from the file our writer wrote."""

    def __init__(self, stat: Any, table_dir: str) -> None:
        self.partition = stat.partition_path
        self.name = os.path.basename(stat.path)
        self.file_id = stat.file_id
        self.rows = stat.num_writes
        self.inserts = stat.num_inserts
        self.updates = stat.num_update_writes
        self.prev_commit = None if stat.prev_commit in (None, "null") else stat.prev_commit
        self.bucket = int(self.name.split("_")[1].split("-")[0])
        self.our_file = os.path.join(table_dir, stat.path)
        self.base_file: str | None = None  # set for a merge: the file it replaced


class FloorFormat:
    """Encoding settings of our writer's files, read from one of them (not timed)."""

    def __init__(self, our_file: str) -> None:
        from airflow_hoodie.settings.base_file import BaseFileSettings
        from airflow_hoodie.table.file_group.base_file_writer import ROW_GROUP_ROWS

        md = pq.ParquetFile(our_file).metadata
        rg = md.row_group(0)
        self.settings = BaseFileSettings.from_config(config(True))
        from airflow_hoodie.table.file_group.base_file_writer import compression_level

        self.codec = rg.column(0).compression.lower()
        self.level = compression_level(self.codec)
        self.dictionary = [rg.column(i).path_in_schema for i in range(rg.num_columns)
                           if any("DICTIONARY" in e for e in rg.column(i).encodings)]
        self.avro_schema = md.metadata[b"parquet.avro.schema"]
        self.row_group_rows = ROW_GROUP_ROWS


def plan_of(table_dir: str, instant: str) -> list[FileSpec]:
    from airflow_hoodie.table.hoodie_table import HoodieTable

    meta = HoodieTable.load(table_dir).timeline.commit_metadata(instant)
    return [FileSpec(s, table_dir) for s in meta.write_stats]


def one_value(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))


def stamp(data: pa.Table, keys: pa.Array, instant: str, spec: FileSpec, start: int = 0) -> pa.Table:
    """``data`` with Hudi's five meta columns in front, computed with pyarrow compute."""
    n = data.num_rows
    idx = pc.cast(pa.array(np.arange(start, start + n, dtype=np.int64)), pa.string())
    seq = pc.binary_join_element_wise(pa.scalar(f"{instant}_{spec.bucket}_"), idx, "")
    cols = [one_value(instant, n), seq, keys, one_value(spec.partition, n), one_value(spec.name, n)]
    return pa.Table.from_arrays(cols + list(data.columns), names=list(META) + data.column_names)


def footer(fmt: FloorFormat, bloom: Any, keys: pa.ChunkedArray) -> dict[bytes, bytes]:
    mm = pc.min_max(keys)
    return {b"org.apache.hudi.bloomfilter": bloom.serialize().encode(),
            b"hoodie_bloom_filter_type_code": str(bloom.type_code).encode(),
            b"hoodie_min_record_key": mm["min"].as_py().encode(), b"hoodie_max_record_key": mm["max"].as_py().encode(),
            b"parquet.avro.schema": fmt.avro_schema, b"writer.model.name": b"avro"}


def write_file(fmt: FloorFormat, phases: Phases, out_dir: str, spec: FileSpec, table: pa.Table, bloom: Any) -> None:
    meta = phases.timed("bloom", footer, fmt, bloom, table.column(RK))
    part = os.path.join(out_dir, spec.partition)
    os.makedirs(part, exist_ok=True)

    def encode() -> None:
        with pq.ParquetWriter(os.path.join(part, spec.name), table.schema, compression=fmt.codec,
                              compression_level=fmt.level,
                              data_page_size=fmt.settings.page_size, store_schema=False, write_statistics=True,
                              use_dictionary=fmt.dictionary) as w:
            w.write_table(table, row_group_size=fmt.row_group_rows)
            w.add_key_value_metadata({k.decode(): v.decode() for k, v in meta.items()})

    phases.timed("parquet write", encode)


def new_bloom(fmt: FloorFormat, keys: pa.Array) -> Any:
    from airflow_hoodie.table.bloom.bloom_footer import new_bloom_filter

    bf = new_bloom_filter(fmt.settings.bloom)
    bf.add_many(keys)
    return bf


def floor_bulk_insert(rows: pa.Table, plan: list[FileSpec], fmt: FloorFormat, instant: str, out_dir: str,
                      phases: Phases, threads: int) -> None:
    """Keys, the (partition, key) order, and per file: meta columns, bloom filter, parquet."""
    from airflow_hoodie.table.parallel_map import parallel_map

    def prepare() -> pa.Table:
        keyed = rows.append_column(RK, pc.cast(rows.column("id"), pa.string()))
        order = pc.sort_indices(keyed.select(["p", RK]), [("p", "ascending"), (RK, "ascending")])
        return keyed.take(order)

    ordered = phases.timed("keys + sort", prepare)
    items, at = [], 0
    for spec in sorted(plan, key=lambda s: (s.partition, s.bucket)):
        items.append((spec, ordered.slice(at, spec.rows)))
        at += spec.rows
    assert at == rows.num_rows

    def one(item: tuple[FileSpec, pa.Table]) -> None:
        spec, part = item
        keys = part.column(RK).combine_chunks()
        table = phases.timed("meta columns", stamp, part.drop_columns([RK]), keys, instant, spec)
        bloom = phases.timed("bloom", new_bloom, fmt, keys)
        write_file(fmt, phases, out_dir, spec, table, bloom)

    parallel_map(one, items, threads, "floor")


def floor_upsert(batch: pa.Table, plan: list[FileSpec], fmt: FloorFormat, instant: str, out_dir: str,
                 phases: Phases, threads: int) -> None:
    """Per partition: read the rewritten files, merge by key, stamp, extend filters, write."""
    from airflow_hoodie.table.parallel_map import parallel_map

    def prepare() -> dict[str, pa.Table]:
        keyed = batch.append_column(RK, pc.cast(batch.column("id"), pa.string()))
        codes = pc.dictionary_encode(keyed.column("p")).combine_chunks()
        order = pc.sort_indices(codes.indices).to_numpy()
        counts = np.bincount(codes.indices.to_numpy(), minlength=len(codes.dictionary))
        ordered, out, at = keyed.take(pa.array(order)), {}, 0
        for p, n in zip(codes.dictionary.to_pylist(), counts):
            out[p], at = ordered.slice(at, int(n)), at + int(n)
        return out

    by_partition = phases.timed("keys + route", prepare)
    specs: dict[str, list[FileSpec]] = defaultdict(list)
    for spec in plan:
        specs[spec.partition].append(spec)
    parallel_map(partial(_floor_partition, fmt, phases, instant, out_dir, by_partition),
                 list(specs.values()), threads, "floor")


def _floor_partition(fmt: FloorFormat, phases: Phases, instant: str, out_dir: str, by_partition: dict[str, pa.Table],
                     specs: list[FileSpec]) -> None:
    from airflow_hoodie.table.bloom.bloom_footer import extended_footer_filter

    incoming = by_partition[specs[0].partition]
    in_keys = incoming.column(RK).combine_chunks()
    merged = []
    matched = []
    for spec in specs:
        if spec.base_file is None:
            continue
        old = phases.timed("parquet read", pq.read_table, spec.base_file, read_dictionary=list(ONE_VALUE))

        def merge(old: pa.Table = old, spec: FileSpec = spec) -> tuple[pa.Table, pa.Table, pa.Array]:
            replaced = pc.is_in(old.column(RK), value_set=in_keys)
            kept = old.filter(pc.invert(replaced))
            kept = kept.set_column(kept.schema.get_field_index(FN), FN, one_value(spec.name, kept.num_rows))
            hit = old.column(RK).filter(replaced).combine_chunks()
            return kept, incoming.filter(pc.is_in(in_keys, value_set=hit)), hit

        kept, updates, hit = phases.timed("merge", merge)
        merged.append((spec, old, kept, updates))
        matched.append(hit)
    inserts = incoming.filter(pc.invert(pc.is_in(in_keys, value_set=pa.concat_arrays(matched)))) \
        if matched else incoming
    at = 0
    for spec in specs:
        found = next((m for m in merged if m[0] is spec), None)
        new_rows = inserts.slice(at, spec.inserts)
        at += spec.inserts
        if found is None:
            keys = new_rows.column(RK).combine_chunks()
            table = phases.timed("meta columns", stamp, new_rows.drop_columns([RK]), keys, instant, spec)
            write_file(fmt, phases, out_dir, spec, table, phases.timed("bloom", new_bloom, fmt, keys))
            continue
        _, old, kept, updates = found
        new = pa.concat_tables([updates, new_rows])
        keys = new.column(RK).combine_chunks()
        stamped = phases.timed("meta columns", stamp, new.drop_columns([RK]), keys, instant, spec)
        table = phases.timed("meta columns", pa.concat_tables([kept, stamped]).unify_dictionaries)
        new_keys = new_rows.column(RK).combine_chunks()
        bloom = phases.timed("bloom", extended_footer_filter, old.schema.metadata, fmt.settings.bloom, new_keys)
        assert bloom is not None and table.num_rows == spec.rows, (spec.name, table.num_rows, spec.rows)
        write_file(fmt, phases, out_dir, spec, table, bloom)
    assert at == len(inserts), (at, len(inserts))


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    res = fn()
    return time.perf_counter() - t0, time.process_time() - c0, res


def check_same_files(plan: list[FileSpec], out_dir: str) -> tuple[int, int]:
    """The floor wrote the files ours did: same names, rows, columns and row groups; returns
    the bytes of both (the same encodings give sizes within a few bytes)."""
    sizes = [0, 0]
    for spec in plan:
        floor_file = os.path.join(out_dir, spec.partition, spec.name)
        ours, floor = pq.ParquetFile(spec.our_file).metadata, pq.ParquetFile(floor_file).metadata
        assert (ours.num_rows, ours.num_columns, ours.num_row_groups) == (
            floor.num_rows, floor.num_columns, floor.num_row_groups), (spec.name, ours, floor)
        sizes[0] += os.path.getsize(spec.our_file)
        sizes[1] += os.path.getsize(floor_file)
    return sizes[0], sizes[1]


class InlinePool:
    """A stand-in for the writer's bloom-filter pool that runs each call at once: a profile
    of one thread then charges the filter to itself, not to whatever runs beside it."""

    @staticmethod
    def submit(fn: Callable[..., Any], *args: Any) -> Any:
        from concurrent.futures import Future

        done: Future = Future()
        done.set_result(fn(*args))
        return done

    def __call__(self) -> InlinePool:
        return self


def profile_ours(fn: Callable[[], Any], top: int) -> str:
    prof = cProfile.Profile(time.process_time)  # CPU seconds: this machine is shared
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


class Bench:
    """The tables, plans and runs of one benchmark process."""

    def __init__(self, args: argparse.Namespace) -> None:
        from airflow_hoodie.actions.write import write_arrow

        self.args, self.write_arrow = args, write_arrow
        self.tmp = tempfile.mkdtemp(prefix="format-floor-")
        self.rows, self.batch = table_and_batch(args.rows, args.batch)
        self.threads = os.cpu_count() or 1
        self.variants = ["ours", "floor"] if args.skip_no_mdt else ["ours", "ours_no_mdt", "floor"]
        self.loaded: dict[bool, str] = {}
        for mdt in (True, False):  # untimed: the tables upserted into, and the plans of both steps
            self.loaded[mdt] = os.path.join(self.tmp, f"loaded-{mdt}")
            res = write_arrow(self.loaded[mdt], self.rows, "bulk_insert", config(mdt))
            if mdt:
                self.bulk_plan, self.bulk_instant = plan_of(self.loaded[mdt], res.instant), res.instant
        self.fmt = FloorFormat(self.bulk_plan[0].our_file)
        probe = shutil.copytree(self.loaded[True], os.path.join(self.tmp, "probe"))
        res = write_arrow(probe, self.batch, "upsert", config(True))
        self.upsert_plan, self.upsert_instant = plan_of(probe, res.instant), res.instant
        bases = {s.file_id: s.our_file for s in self.bulk_plan}
        for spec in self.upsert_plan:
            spec.base_file = bases[spec.file_id] if spec.prev_commit else None
        self.bytes: dict[str, tuple[int, int]] = {}
        for step, plan in (("bulk_insert", self.bulk_plan), ("upsert", self.upsert_plan)):
            out = os.path.join(self.tmp, f"check-{step}")
            self.floor(step, out, Phases())
            self.bytes[step] = check_same_files(plan, out)
            shutil.rmtree(out)
        shutil.rmtree(probe)

    def floor(self, step: str, out: str, phases: Phases) -> None:
        if step == "bulk_insert":
            floor_bulk_insert(self.rows, self.bulk_plan, self.fmt, self.bulk_instant, out, phases, self.threads)
        else:
            floor_upsert(self.batch, self.upsert_plan, self.fmt, self.upsert_instant, out, phases, self.threads)

    def ours(self, step: str, path: str, mdt: bool, executor: Any = None) -> Callable[[], Any]:
        if step == "upsert":
            shutil.copytree(self.loaded[mdt], path)
        data = self.rows if step == "bulk_insert" else self.batch
        return lambda: self.write_arrow(path, data, step, config(mdt), executor=executor)

    def run(self, step: str, variant: str, r: int) -> dict[str, Any]:
        path = os.path.join(self.tmp, f"{step}-{variant}-{r}")
        phases = Phases()
        if variant == "floor":
            wall, cpu, _ = timed(lambda: self.floor(step, path, phases))
        else:
            wall, cpu, _ = timed(self.ours(step, path, variant == "ours"))
        shutil.rmtree(path)
        return {"wall": wall, "cpu": cpu, "phases": dict(phases.seconds)}

    def measure(self, step: str) -> dict[str, list[dict[str, Any]]]:
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in self.variants}
        for r in range(self.args.repeat):
            k = r % len(self.variants)
            for variant in self.variants[k:] + self.variants[:k]:
                runs[variant].append(self.run(step, variant, r))
        return runs

    def profile(self, step: str) -> str:
        """cProfile of one run of ours and one of the floor, each on one thread."""
        from airflow_hoodie.actions.executor import LocalExecutor

        from airflow_hoodie.table.file_group import base_file_writer

        path = os.path.join(self.tmp, f"profile-{step}")
        pool = base_file_writer._bloom_executor
        base_file_writer._bloom_executor = InlinePool()  # the filter on the profiled thread too
        try:
            ours = profile_ours(self.ours(step, path, True, LocalExecutor(1)), self.args.profile_top)
        finally:
            base_file_writer._bloom_executor = pool
        shutil.rmtree(path)
        threads, self.threads = self.threads, 1
        floor = profile_ours(lambda: self.floor(step, path, Phases()), self.args.profile_top)
        self.threads = threads
        shutil.rmtree(path)
        return f"----- ours -----\n{ours}\n----- floor -----\n{floor}"


def summarize(step: str, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    med = {v: {k: statistics.median(x[k] for x in rs) for k in ("wall", "cpu")} for v, rs in runs.items()}
    out: dict[str, Any] = {f"{v}_{k}_s": round(m[k], 3) for v, m in med.items() for k in ("wall", "cpu")}
    for v, ours in runs.items():
        if v == "floor":
            continue
        out[f"ratio_{v}"] = round(med[v]["wall"] / med["floor"]["wall"], 3)
        out[f"ratio_{v}_cpu"] = round(med[v]["cpu"] / med["floor"]["cpu"], 3)
        out[f"paired_ratio_{v}"] = round(statistics.median(
            a["wall"] / b["wall"] for a, b in zip(ours, runs["floor"])), 3)
        out[f"runs_{v}"] = [round(x["wall"], 3) for x in ours]
    out["runs_floor"] = [round(x["wall"], 3) for x in runs["floor"]]
    phases = defaultdict(list)
    for x in runs["floor"]:
        for k, s in x["phases"].items():
            phases[k].append(s)
    out["floor_phase_thread_s"] = {k: round(statistics.median(v), 3) for k, v in phases.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3, help="each figure is the median of this many runs")
    ap.add_argument("--skip-no-mdt", action="store_true", help="do not measure ours with the metadata table off")
    ap.add_argument("--profile", action="store_true", help="print cProfile of ours per step (single thread)")
    ap.add_argument("--profile-top", type=int, default=30)
    args = ap.parse_args()
    figures: dict[str, Any] = {"rows": args.rows, "batch": args.batch, "repeat": args.repeat,
                               "table_type": "COPY_ON_WRITE", "engine": "write_arrow (in-process)",
                               "threads": os.cpu_count(), "load_before": os.getloadavg()}
    bench = Bench(args)
    figures.update({"codec": bench.fmt.codec, "dictionary_columns": bench.fmt.dictionary,
                    "bulk_insert_files": len(bench.bulk_plan), "upsert_files": len(bench.upsert_plan),
                    "upsert_files_merged": sum(s.base_file is not None for s in bench.upsert_plan),
                    "bytes_ours_vs_floor": bench.bytes})
    rows = []
    for step, work in (("bulk_insert", f"bulk_insert {args.rows:,} rows, COW"),
                       ("upsert", f"upsert {args.batch:,} (20% updates) into {args.rows:,}, COW")):
        figures[step] = summarize(step, bench.measure(step))
        for v in bench.variants[:-1]:
            rows.append((f"{work}{'' if v == 'ours' else ', no metadata table'}", figures[step][f"{v}_wall_s"],
                         figures[step]["floor_wall_s"], "pyarrow format floor"))
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    print_table(rows)
    for step in ("bulk_insert", "upsert"):
        f = figures[step]
        print(f"{step}: ours/floor wall {f['ratio_ours']:.2f}x, CPU {f['ratio_ours_cpu']:.2f}x, "
              f"paired {f['paired_ratio_ours']:.2f}x (goal <= 1.3x); floor phases {f['floor_phase_thread_s']}")
    print(f"figures: {write_report('format_floor', figures, rows)}")
    if args.profile:
        for step in ("bulk_insert", "upsert"):
            print(f"\n===== cProfile, {step}, one thread =====\n{bench.profile(step)}")
    shutil.rmtree(bench.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
