"""Storage facade over ``pyarrow.fs``.

Everything the format layer reads or writes goes through :class:`Storage`, so local
paths, ``file://``, ``s3://``, ``gs://`` and ``hdfs://`` behave alike. Paths handed to
and returned by a ``Storage`` are *filesystem paths* as pyarrow understands them
(``/tmp/t`` locally, ``bucket/key`` on object stores); :meth:`Storage.uri` turns one back
into a URI for external tools (Spark, hudi-rs).
"""

from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import pyarrow as pa
import pyarrow.fs as pafs

from airflow_hoodie.errors import HoodieIOError


@dataclass(frozen=True)
class FileStatus:
    """One entry of a directory listing."""

    path: str
    size: int
    is_dir: bool
    mtime_ns: int | None

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


def _scheme(uri: str) -> str:
    if "://" in uri:
        return uri.split("://", 1)[0].lower()
    return ""


class Storage:
    """A filesystem plus the URI prefix needed to turn its paths back into URIs."""

    def __init__(self, fs: pafs.FileSystem, uri_prefix: str = "") -> None:
        self.fs = fs
        self._uri_prefix = uri_prefix
        self._local = isinstance(fs, pafs.LocalFileSystem)

    # ----------------------------------------------------------------- construction
    @classmethod
    def for_uri(
        cls, uri: str, storage_options: Mapping[str, Any] | None = None
    ) -> tuple["Storage", str]:
        """Return the storage serving ``uri`` and the filesystem path of ``uri`` in it.

        ``storage_options`` are passed to the pyarrow filesystem constructor (for S3:
        ``region``, ``access_key``, ``secret_key``, ``endpoint_override`` ...), so the
        same options a user gives hudi-rs or Spark reach us unchanged.
        """
        opts = dict(storage_options or {})
        scheme = _scheme(uri)
        try:
            if scheme in ("", "file"):
                path = uri[len("file://"):] if scheme == "file" else uri
                path = os.path.abspath(os.path.expanduser(path))
                return cls(pafs.LocalFileSystem(), ""), path.rstrip("/") or "/"
            if scheme in ("s3", "s3a"):
                fs = pafs.S3FileSystem(**opts)
                path = uri.split("://", 1)[1].rstrip("/")
                return cls(fs, "s3://"), path
            if scheme in ("gs", "gcs"):
                fs = pafs.GcsFileSystem(**opts)
                path = uri.split("://", 1)[1].rstrip("/")
                return cls(fs, "gs://"), path
            if scheme == "hdfs":
                rest = uri.split("://", 1)[1]
                host_port, _, path = rest.partition("/")
                host, _, port = host_port.partition(":")
                fs = pafs.HadoopFileSystem(host or "default", int(port or 0), **opts)
                return cls(fs, f"hdfs://{host_port}"), "/" + path.rstrip("/")
        except (OSError, pa.ArrowException) as exc:
            raise HoodieIOError(
                f"Cannot open storage for {uri!r}: {exc}. Check the URI and the "
                "storage options (credentials, region, endpoint)."
            ) from exc
        raise HoodieIOError(
            f"Unsupported URI scheme {scheme!r} in {uri!r}; use a local path, file://, "
            "s3://, gs:// or hdfs://."
        )

    @classmethod
    def local(cls) -> "Storage":
        return cls(pafs.LocalFileSystem(), "")

    # ---------------------------------------------------------------------- paths
    @property
    def is_local(self) -> bool:
        return self._local

    @staticmethod
    def join(*parts: str) -> str:
        cleaned = [p for p in parts if p not in ("", None)]
        return posixpath.join(*cleaned) if cleaned else ""

    def uri(self, path: str) -> str:
        """The URI of ``path`` for tools that want one (Spark, hudi-rs)."""
        if self._uri_prefix.startswith("hdfs://"):
            return self._uri_prefix + path
        return self._uri_prefix + path if self._uri_prefix else path

    # -------------------------------------------------------------------- queries
    def _wrap(self, what: str, path: str, exc: Exception) -> HoodieIOError:
        return HoodieIOError(f"Cannot {what} {self.uri(path)!r}: {exc}")

    def info(self, path: str) -> FileStatus | None:
        try:
            fi = self.fs.get_file_info(path)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("stat", path, exc) from exc
        if fi.type == pafs.FileType.NotFound:
            return None
        return FileStatus(
            path=fi.path,
            size=fi.size or 0,
            is_dir=fi.type == pafs.FileType.Directory,
            mtime_ns=fi.mtime_ns,
        )

    def exists(self, path: str) -> bool:
        return self.info(path) is not None

    def size(self, path: str) -> int:
        st = self.info(path)
        if st is None:
            raise HoodieIOError(f"File {self.uri(path)!r} does not exist.")
        return st.size

    def list_dir(self, path: str, recursive: bool = False) -> list[FileStatus]:
        """Entries under ``path``; a missing directory lists as empty."""
        try:
            infos = self.fs.get_file_info(
                pafs.FileSelector(path, allow_not_found=True, recursive=recursive)
            )
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("list", path, exc) from exc
        return [
            FileStatus(
                path=fi.path,
                size=fi.size or 0,
                is_dir=fi.type == pafs.FileType.Directory,
                mtime_ns=fi.mtime_ns,
            )
            for fi in infos
        ]

    # ---------------------------------------------------------------------- reads
    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError as exc:
            raise HoodieIOError(f"File {self.uri(path)!r} does not exist.") from exc
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("read", path, exc) from exc

    def open_input(self, path: str) -> pa.NativeFile:
        """A seekable file, for formats read by offset (log blocks, parquet)."""
        try:
            return self.fs.open_input_file(path)
        except FileNotFoundError as exc:
            raise HoodieIOError(f"File {self.uri(path)!r} does not exist.") from exc
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("open", path, exc) from exc

    # --------------------------------------------------------------------- writes
    def mkdirs(self, path: str) -> None:
        try:
            self.fs.create_dir(path, recursive=True)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("create directory", path, exc) from exc

    def open_output(self, path: str) -> pa.NativeFile:
        parent = posixpath.dirname(path)
        if parent:
            self.mkdirs(parent)
        try:
            return self.fs.open_output_stream(path)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("write", path, exc) from exc

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` so readers never see a half-written file.

        Locally the bytes go to a temp file that is renamed into place; object stores
        publish an object only once its upload completes, so they are atomic already.
        """
        parent = posixpath.dirname(path)
        if parent:
            self.mkdirs(parent)
        try:
            if self._local:
                tmp = f"{path}.{uuid.uuid4().hex}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            else:
                with self.fs.open_output_stream(path) as f:
                    f.write(data)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("write", path, exc) from exc

    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; True if we did.

        This is the timeline's atomic step: two writers racing to create the same
        instant file cannot both win. Locally a hard link of a fully written temp file
        gives all-or-nothing semantics; on object stores we check then write, which is
        what Hudi does without a lock provider.
        """
        parent = posixpath.dirname(path)
        if parent:
            self.mkdirs(parent)
        if self._local:
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    return False
                return True
            except OSError as exc:
                raise self._wrap("create", path, exc) from exc
            finally:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        if self.exists(path):
            return False
        self.write_bytes(path, data)
        return True

    def open_append(self, path: str) -> pa.NativeFile:
        """Append stream; only filesystems with real appends (local, HDFS) have it."""
        try:
            return self.fs.open_append_stream(path)
        except (OSError, pa.ArrowException, NotImplementedError) as exc:
            raise self._wrap("append to", path, exc) from exc

    @property
    def supports_append(self) -> bool:
        return self._local or isinstance(self.fs, pafs.HadoopFileSystem)

    def delete(self, path: str, missing_ok: bool = True) -> bool:
        """Delete one file; returns whether it existed."""
        try:
            self.fs.delete_file(path)
            return True
        except FileNotFoundError:
            if missing_ok:
                return False
            raise HoodieIOError(f"File {self.uri(path)!r} does not exist.")
        except (OSError, pa.ArrowException) as exc:
            if not self.exists(path) and missing_ok:
                return False
            raise self._wrap("delete", path, exc) from exc

    def delete_dir(self, path: str) -> None:
        try:
            if self.exists(path):
                self.fs.delete_dir(path)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("delete directory", path, exc) from exc

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        for st in self.list_dir(path, recursive=True):
            if not st.is_dir:
                yield st
