"""Writing Hudi 1.x's LSM timeline: the archived timeline of table versions 8 and 9.

Archival (Hudi's LSMTimelineWriter) turns a batch of completed actions into one level-0
parquet file ``<min>_<max>_0.parquet`` of ``HoodieLSMTimelineInstant`` rows, then publishes
it in a new snapshot: ``manifest_<N+1>`` (Jackson pretty JSON listing every live file with
its length) and then ``_version_`` (the text ``N+1``). The manifest is the commit point: a
reader (ours, Hudi's, hudi-rs's) only trusts files a manifest lists, so a parquet file or
manifest left by a crash is invisible and is replaced by the retry.

Once ``hoodie.timeline.compaction.batch.size`` files gather in a layer, the oldest of them
(at most that many, and no more than 1 GiB together unless only two fit) are merged into
one file of the next layer, in a new snapshot; compaction cascades down the layers. After
a compaction, snapshots beyond the newest 3 (plus one per compaction just done) are
cleaned: their manifests and every parquet file no kept snapshot lists.

Everything goes through :class:`Storage`, which also runs on object stores: each file is
written whole (a temp file renamed into place locally; an object store publishes an object
only once its upload completes), never appended or renamed by us.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.lsm_timeline import COMPACTION_BATCH_SIZE
from airflow_hoodie.errors import HoodieConfigError, HoodieCorruptedDataError, HoodieIOError
from airflow_hoodie.table.metadata.commit_metadata import to_jackson_json
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.lsm_timeline import (
    FILE_NAME,
    MANIFEST_PREFIX,
    VERSION_FILE,
    LsmRecord,
    latest_snapshot_version,
)

#: LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1, the ``version`` of every row Hudi writes
INSTANT_VERSION = 1
#: level-0 files are what archival writes; compaction writes level n+1 from level n
LAYER_ZERO = 0
#: snapshots kept by cleaning besides the ones a compaction just made (Hudi 1.x's constant)
RETAINED_VERSIONS = 3
#: a compaction group stops growing past this many bytes (Hudi 1.x's 1 GB bound)
TARGET_FILE_MAX_BYTES = 1024 * 1024 * 1024
#: the parquet codec of Hudi's writers (``hoodie.parquet.compression.codec``)
DEFAULT_CODEC = "gzip"

#: org.apache.hudi.avro.model.HoodieLSMTimelineInstant (HoodieLSMTimelineInstant.avsc)
AVRO_SCHEMA = {
    "type": "record",
    "name": "HoodieLSMTimelineInstant",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantTime", "type": ["null", "string"], "default": None},
        {"name": "completionTime", "type": ["null", "string"], "default": None},
        {"name": "action", "type": ["null", "string"], "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ],
}

#: the parquet schema parquet-avro derives from it: nullable unions become optional
#: columns, strings UTF8-annotated binaries, the plain ``int`` a required int32
ARROW_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ],
)

#: parquet-avro's footer keys: the writer's Avro schema and its data model
FOOTER_METADATA = {
    "parquet.avro.schema": json.dumps(AVRO_SCHEMA, separators=(",", ":")),
    "writer.model.name": "avro",
}


@dataclass(frozen=True)
class LsmSettings:
    """How the LSM timeline compacts and cleans (Hudi's write config)."""

    compaction_batch_size: int = 10
    retained_versions: int = RETAINED_VERSIONS
    target_file_max_bytes: int = TARGET_FILE_MAX_BYTES
    compression: str = DEFAULT_CODEC

    @classmethod
    def from_config(cls, config: HoodieConfig) -> "LsmSettings":
        batch = config.get_int(COMPACTION_BATCH_SIZE)
        if batch < 2:
            raise HoodieConfigError(
                f"{COMPACTION_BATCH_SIZE}={batch} cannot compact anything: a compaction merges at least 2 files. "
                "Set it to 2 or more (Hudi's default is 10).")
        codec = (config.get("hoodie.parquet.compression.codec") or DEFAULT_CODEC).lower()
        return cls(compaction_batch_size=batch, compression=codec)


# ------------------------------------------------------------------ names and manifests
def file_name(min_instant: str, max_instant: str, layer: int) -> str:
    """``${min_instant}_${max_instant}_${layer}.parquet``."""
    return f"{min_instant}_{max_instant}_{layer}.parquet"


def file_layer(name: str) -> int:
    """The layer a file name carries; 0 for a name that is not an LSM file (as Hudi)."""
    m = FILE_NAME.match(name)
    return int(m.group(3)) if m else 0


def _bounds(name: str) -> tuple[str, str]:
    m = FILE_NAME.match(name)
    if m is None:
        raise HoodieCorruptedDataError(f"{name!r} is not an LSM timeline file name (<min>_<max>_<layer>.parquet).")
    return m.group(1), m.group(2)


def compacted_file_name(files: Sequence[str]) -> str:
    """The file that replaces ``files``: their whole time range, one layer below the first."""
    mins, maxs = zip(*(_bounds(f) for f in files))
    return file_name(min(mins), max(maxs), file_layer(files[0]) + 1)


@dataclass(frozen=True)
class ManifestEntry:
    file_name: str
    file_len: int


def manifest_json(entries: Sequence[ManifestEntry]) -> bytes:
    """HoodieLSMTimelineManifest as Hudi's ``toJsonString``: Jackson's default pretty printer
    over the fields ``files`` -> ``fileName``, ``fileLen``."""
    doc = {"files": [{"fileName": e.file_name, "fileLen": int(e.file_len)} for e in entries]}
    return to_jackson_json(doc).encode("utf-8")


def parse_manifest(data: bytes, where: str) -> list[ManifestEntry]:
    try:
        doc = json.loads(data.decode("utf-8") or "{}")
        return [ManifestEntry(str(e["fileName"]), int(e.get("fileLen") or 0)) for e in doc.get("files") or []]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HoodieCorruptedDataError(
            f"The LSM timeline manifest {where} cannot be read ({exc}); restore it from a backup, or remove it "
            "and _version_ so the previous snapshot is used.") from exc


def records_table(records: Sequence[LsmRecord]) -> pa.Table:
    """Rows of HoodieLSMTimelineInstant, in the given order."""
    return pa.Table.from_pydict(
        {
            "instantTime": [r.instant_time for r in records],
            "completionTime": [r.completion_time for r in records],
            "action": [r.action for r in records],
            "metadata": [r.metadata for r in records],
            "plan": [r.plan for r in records],
            "version": [INSTANT_VERSION] * len(records),
        },
        schema=ARROW_SCHEMA,
    )


# ------------------------------------------------------------------------------ writer
class LsmTimelineWriter:
    """Archives batches into one LSM timeline folder and keeps its layers compacted."""

    def __init__(self, storage: Storage, folder: str, settings: LsmSettings | None = None) -> None:
        self.storage = storage
        self.folder = folder
        self.settings = settings or LsmSettings()

    # -------------------------------------------------------------- snapshots
    def _path(self, name: str) -> str:
        return Storage.join(self.folder, name)

    def latest_version(self) -> int:
        return latest_snapshot_version(self.storage, self.folder) if self.storage.exists(self.folder) else -1

    def manifest(self, version: int | None = None) -> list[ManifestEntry]:
        """The files of snapshot ``version`` (default: the latest); none before the first."""
        version = self.latest_version() if version is None else version
        if version < 0:
            return []
        path = self._path(f"{MANIFEST_PREFIX}{version}")
        try:
            data = self.storage.read_bytes(path)
        except HoodieIOError as exc:
            raise HoodieCorruptedDataError(
                f"The LSM timeline names snapshot {version} but {self.storage.uri(path)} cannot be read ({exc}).") from exc
        return parse_manifest(data, self.storage.uri(path))

    def all_versions(self) -> list[int]:
        out = []
        for st in self.storage.list_dir(self.folder) if self.storage.exists(self.folder) else []:
            suffix = st.name[len(MANIFEST_PREFIX):] if st.name.startswith(MANIFEST_PREFIX) else ""
            if not st.is_dir and suffix.isdigit():
                out.append(int(suffix))
        return out

    def is_committed(self, name: str) -> bool:
        return any(e.file_name == name for e in self.manifest())

    def newest_archived_instant(self) -> str | None:
        """The newest instant time the latest snapshot holds, read from its file names
        (``<min>_<max>_<layer>.parquet``), not from the files: what lets archival tell
        cheaply whether an active instant may be archived already (a crash after the
        snapshot was published, before the active files went)."""
        names = [e.file_name for e in self.manifest() if FILE_NAME.match(e.file_name)]
        return max((_bounds(n)[1] for n in names), default=None)

    def update_manifest(self, files_to_remove: Sequence[str], file_to_add: str) -> int:
        """Publish a new snapshot: the latest one minus ``files_to_remove`` plus ``file_to_add``.

        Writes ``manifest_<N+1>`` (replacing one a crashed attempt left), then ``_version_``.
        A crash between the two leaves ``_version_`` at N, so readers keep reading snapshot N
        and the next writer rewrites ``manifest_<N+1>``. Returns the new version."""
        latest = self.latest_version()
        drop = set(files_to_remove)
        entries = [e for e in self.manifest(latest) if e.file_name not in drop]
        entries.append(ManifestEntry(file_to_add, self.storage.size(self._path(file_to_add))))
        new_version = 1 if latest < 0 else latest + 1
        self.storage.write_bytes(self._path(f"{MANIFEST_PREFIX}{new_version}"), manifest_json(entries))
        self.storage.write_bytes(self._path(VERSION_FILE), str(new_version).encode("utf-8"))
        return new_version

    # ------------------------------------------------------------------ write
    def _write_parquet(self, name: str, table: pa.Table) -> None:
        buf = io.BytesIO()
        # no ARROW:schema in the footer (parquet-avro writes none); its own keys instead
        with pq.ParquetWriter(buf, ARROW_SCHEMA, compression=self.settings.compression, store_schema=False) as out:
            out.write_table(table)
            out.add_key_value_metadata(FOOTER_METADATA)
        self.storage.write_bytes(self._path(name), buf.getvalue())

    def write(self, records: Sequence[LsmRecord]) -> str | None:
        """Archive ``records`` (sorted by instant time) as a level-0 file and publish it.

        Returns the file name, or None when a previous attempt already published this very
        file (it crashed afterwards, while deleting the active instant files)."""
        if not records:
            raise ValueError("An LSM timeline batch needs at least one instant.")
        name = file_name(records[0].instant_time, records[-1].instant_time, LAYER_ZERO)
        if self.storage.exists(self._path(name)):
            if self.is_committed(name):
                return None
            self.storage.delete(self._path(name))  # left half-written by a crash: redo it
        self._write_parquet(name, records_table(records))
        self.update_manifest((), name)
        return name

    # ------------------------------------------------------------- compaction
    def _candidates(self, entries: Sequence[ManifestEntry]) -> list[str]:
        """Hudi's getCandidateFiles: the oldest consecutive files, at most the batch size,
        stopping once their bytes pass the target (restarting while fewer than 2 fit)."""
        out: list[str] = []
        total = 0
        for e in entries:
            total += e.file_len
            out.append(e.file_name)
            if len(out) >= self.settings.compaction_batch_size:
                break
            if total > self.settings.target_file_max_bytes:
                if len(out) < 2:
                    out, total = [], 0
                else:
                    break
        return out

    def _compact_layer(self, entries: Sequence[ManifestEntry], layer: int) -> str | None:
        files = sorted((e for e in entries if file_layer(e.file_name) == layer), key=lambda e: e.file_name)
        if len(files) < self.settings.compaction_batch_size:
            return None
        candidates = self._candidates(files)
        if len(candidates) < 2:
            return None
        target = compacted_file_name(candidates)
        tables = [pq.read_table(self.storage.open_input(self._path(f))) for f in candidates]
        merged = pa.concat_tables([t.select(ARROW_SCHEMA.names).cast(ARROW_SCHEMA) for t in tables])
        self.storage.delete(self._path(target))
        self._write_parquet(target, merged)
        self.update_manifest(candidates, target)
        return target

    def compact_and_clean(self) -> list[str]:
        """Compact layer 0, then each layer below that received a file, then clean.
        Returns the files compaction wrote."""
        written: list[str] = []
        layer = 0
        entries = self.manifest()
        compacted = self._compact_layer(entries, layer)
        while compacted is not None:
            written.append(compacted)
            layer += 1
            compacted = self._compact_layer(self.manifest(), layer)
        self.clean(layer)
        return written

    def clean(self, compacted_versions: int) -> list[str]:
        """Delete the manifests of all but the newest ``retained + compacted_versions``
        snapshots, then every parquet file none of the kept snapshots lists."""
        keep_count = self.settings.retained_versions + compacted_versions
        versions = sorted(self.all_versions(), reverse=True)
        if len(versions) <= keep_count:
            return []
        keep = versions[:keep_count]
        live = {e.file_name for v in keep for e in self.manifest(v)}
        deleted = []
        for v in versions[keep_count:]:
            name = f"{MANIFEST_PREFIX}{v}"
            if self.storage.delete(self._path(name)):
                deleted.append(name)
        for st in self.storage.list_dir(self.folder):
            if not st.is_dir and st.name.endswith(".parquet") and st.name not in live:
                if self.storage.delete(st.path):
                    deleted.append(st.name)
        return deleted
