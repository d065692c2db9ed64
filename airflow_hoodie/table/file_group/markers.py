"""Write markers: ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>``.

A marker is created *before* a data file is created or appended, so a rollback of a
failed write knows every file the write may have touched even if the writer died before
reporting it (Hudi's direct marker layout; IO types CREATE, MERGE, APPEND).
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.table.storage.storage import Storage

TEMP_FOLDER = ".temp"
MARKER_INFIX = ".marker."
IO_CREATE, IO_MERGE, IO_APPEND = "CREATE", "MERGE", "APPEND"


@dataclass(frozen=True)
class Marker:
    partition_path: str
    file_name: str
    io_type: str

    @property
    def data_path(self) -> str:
        """Data file path relative to the table base path."""
        return f"{self.partition_path}/{self.file_name}" if self.partition_path else self.file_name


def marker_dir(storage: Storage, base_path: str, instant_time: str) -> str:
    return storage.join(base_path, ".hoodie", TEMP_FOLDER, instant_time)


def create_marker(storage: Storage, base_path: str, instant_time: str, partition_path: str,
                  file_name: str, io_type: str) -> str:
    """Create the marker for ``file_name`` (idempotent: a retried task finds it already there)."""
    d = marker_dir(storage, base_path, instant_time)
    if partition_path:
        d = storage.join(d, partition_path)
    storage.mkdirs(d)
    path = storage.join(d, f"{file_name}{MARKER_INFIX}{io_type}")
    storage.create_if_absent(path, b"")
    return path


def list_markers(storage: Storage, base_path: str, instant_time: str) -> list[Marker]:
    d = marker_dir(storage, base_path, instant_time)
    if not storage.exists(d):
        return []
    out: list[Marker] = []
    prefix = d.rstrip("/") + "/"
    for st in storage.walk_files(d):
        rel = st.path[len(prefix):] if st.path.startswith(prefix) else st.name
        if MARKER_INFIX not in rel:
            continue  # MARKERS.type / timeline-server marker files are not ours
        head, _, io_type = rel.rpartition(MARKER_INFIX)
        partition, _, name = head.rpartition("/")
        out.append(Marker(partition, name, io_type))
    return out


def delete_marker_dir(storage: Storage, base_path: str, instant_time: str) -> None:
    d = marker_dir(storage, base_path, instant_time)
    if storage.exists(d):
        storage.delete_dir(d)
