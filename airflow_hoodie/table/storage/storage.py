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
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from airflow_hoodie.errors import HoodieIOError
from airflow_hoodie.table.parallel_map import parallel_map
from airflow_hoodie.table.storage import local_conditional
from airflow_hoodie.table.storage.s3_output import BufferedS3Output
from airflow_hoodie.table.storage.s3_conditional import DEFAULT_MAX_ATTEMPTS, S3ConditionalWriter, Versioned

_T = TypeVar("_T")
_R = TypeVar("_R")
#: storage requests a driver step keeps in flight at once (HEADs of the files a write plans on,
#: the partitions' metadata files of a commit)
MAX_CONCURRENT_REQUESTS = 16


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


_S3_BOOL_OPTIONS = ("anonymous", "background_writes", "allow_delayed_open", "allow_bucket_creation",
                    "allow_bucket_deletion", "check_directory_existence_before_creation",
                    "force_virtual_addressing")
_S3_FLOAT_OPTIONS = ("request_timeout", "connect_timeout")
_S3_INT_OPTIONS = ("load_frequency",)
#: our own S3 option (not pyarrow's): attempts per request in the SDK's standard retry mode
S3_RETRY_MAX_ATTEMPTS = "retry_max_attempts"


def s3_filesystem_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """pyarrow ``S3FileSystem`` keyword arguments from storage options, which reach us as
    strings from a connection's JSON extra or a job's ``--storage-option key=value``:
    booleans and numbers are typed here, and retries use the AWS SDK's standard mode
    (``retry_max_attempts`` attempts, 3 by default)."""
    opts = dict(options)
    for key in _S3_BOOL_OPTIONS:
        if isinstance(opts.get(key), str):
            opts[key] = opts[key].strip().lower() in ("1", "true", "yes")
    for key in _S3_FLOAT_OPTIONS:
        if isinstance(opts.get(key), str):
            opts[key] = float(opts[key])
    for key in _S3_INT_OPTIONS:
        if isinstance(opts.get(key), str):
            opts[key] = int(opts[key])
    attempts = int(opts.pop(S3_RETRY_MAX_ATTEMPTS, None) or DEFAULT_MAX_ATTEMPTS)
    opts.setdefault("retry_strategy", pafs.AwsStandardS3RetryStrategy(max_attempts=attempts))
    return opts


def _scheme(uri: str) -> str:
    if "://" in uri:
        return uri.split("://", 1)[0].lower()
    return ""


class Storage:
    """A filesystem plus the URI prefix needed to turn its paths back into URIs."""

    def __init__(self, fs: pafs.FileSystem, uri_prefix: str = "",
                 conditional: S3ConditionalWriter | None = None) -> None:
        self.fs = fs
        self._uri_prefix = uri_prefix
        self._local = isinstance(fs, pafs.LocalFileSystem)
        # object stores have no directories: creating "directory" marker objects would only
        # cost requests (a HEAD and a PUT per level) and nothing reads them
        self._has_dirs = self._local or isinstance(fs, pafs.HadoopFileSystem)
        self._conditional = conditional

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
                fs = pafs.S3FileSystem(**s3_filesystem_options(opts))
                path = uri.split("://", 1)[1].rstrip("/")
                return cls(fs, "s3://", S3ConditionalWriter(opts)), path
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
        except (OSError, pa.ArrowException, TypeError, ValueError) as exc:
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

    @property
    def has_atomic_create(self) -> bool:
        """Whether :meth:`create_if_absent` is atomic against other processes (local: a hard
        link; S3: a conditional PUT). GCS and HDFS here check then write."""
        return self._local or self._conditional is not None

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
        """A file or a directory at ``path``."""
        return self.info(path) is not None

    def file_exists(self, path: str) -> bool:
        """A file (not a directory) at ``path``. On S3 one HEAD, where :meth:`exists` of a
        missing key costs a HEAD and a LIST (is it a directory?): use this for file names."""
        if self._conditional is not None:
            return self._conditional.head(path)
        st = self.info(path)
        return st is not None and not st.is_dir

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
        if self._conditional is not None:  # one GET (pyarrow spends a HEAD first)
            got = self._conditional.get(path)
            if got is None:
                raise HoodieIOError(f"File {self.uri(path)!r} does not exist.")
            return got.data
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
        """Create a directory; a no-op on object stores, which have none (a marker object
        would cost a HEAD and a PUT per level and nothing would read it)."""
        if not self._has_dirs:
            return
        try:
            self.fs.create_dir(path, recursive=True)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("create directory", path, exc) from exc

    def _mkparent(self, path: str) -> None:
        parent = posixpath.dirname(path)
        if parent and self._has_dirs:
            self.mkdirs(parent)

    def open_output(self, path: str) -> pa.NativeFile:
        """A new file, visible whole once closed. On S3 a small file goes up in one
        PutObject at close (:mod:`~airflow_hoodie.table.storage.s3_output`)."""
        self._mkparent(path)
        if self._conditional is not None:
            writer = self._conditional
            stream = BufferedS3Output(lambda data: writer.put(path, data), lambda: self.fs.open_output_stream(path))
            return pa.PythonFile(stream, mode="w")
        try:
            return self.fs.open_output_stream(path)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("write", path, exc) from exc

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` so readers never see a half-written file.

        Locally the bytes go to a temp file that is renamed into place; object stores
        publish an object only once its upload completes, so they are atomic already.
        """
        self._mkparent(path)
        try:
            if self._local:
                local_conditional.write_atomically(path, data)
            elif self._conditional is not None:
                self._conditional.put(path, data)
            else:
                with self.fs.open_output_stream(path) as f:
                    f.write(data)
        except (OSError, pa.ArrowException) as exc:
            raise self._wrap("write", path, exc) from exc

    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; True if we did.

        This is the timeline's atomic step: two writers racing to create the same
        instant file cannot both win. Locally a hard link of a fully written temp file
        gives all-or-nothing semantics; on S3 a PutObject with ``If-None-Match: *``. Other
        stores (GCS, HDFS) check then write, which is what Hudi does without a lock
        provider: use a lock provider there when several writers share a table.
        """
        self._mkparent(path)
        if self._conditional is not None:
            return self._conditional.put_if_absent(path, data) is not None
        if self._local and not data:
            return self._create_empty_local(path)
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

    def _create_empty_local(self, path: str) -> bool:
        """An empty file has no bytes a reader could see half written, so ``O_EXCL`` alone
        is the atomic create: no temp file, no fsync, no link. Markers (one per data file a
        write touches) and empty requested/inflight instants take this path; Hudi does not
        sync marker files either, and a rollback that finds no marker lists the partition."""
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            return False
        except OSError as exc:
            raise self._wrap("create", path, exc) from exc
        return True

    # ------------------------------------------------------------ versioned writes
    def read_versioned(self, path: str) -> Versioned | None:
        """A small file and its version tag (S3: the ETag); None when absent. With
        :meth:`replace_if_version` this is a compare-and-swap (the storage-based lock)."""
        if self._conditional is not None:
            return self._conditional.get(path)
        if self._local:
            got = local_conditional.read_versioned(path)
            return None if got is None else Versioned(*got)
        raise self._not_conditional("read a versioned file")

    def create_versioned(self, path: str, data: bytes) -> Versioned | None:
        """Create ``path`` if absent; the written version, or None when it exists."""
        if self._conditional is not None:
            etag = self._conditional.put_if_absent(path, data)
            return None if etag is None else Versioned(data, etag)
        if self._local:
            return Versioned(data, local_conditional.etag_of(data)) if self.create_if_absent(path, data) else None
        raise self._not_conditional("create a versioned file")

    def replace_if_version(self, path: str, data: bytes, version: str) -> Versioned | None:
        """Replace ``path`` only if it still has ``version``; the new version, or None."""
        if self._conditional is not None:
            etag = self._conditional.put_if_match(path, data, version)
            return None if etag is None else Versioned(data, etag)
        if self._local:
            etag = local_conditional.replace_if_match(path, data, version)
            return None if etag is None else Versioned(data, etag)
        raise self._not_conditional("replace a versioned file")

    def _not_conditional(self, what: str) -> Exception:
        from airflow_hoodie.errors import HoodieNotSupportedError

        return HoodieNotSupportedError(
            f"Cannot {what} on {self.uri('')!r}: conditional writes are implemented for local "
            "paths and S3 only. Use the ZooKeeper or DynamoDB lock provider on this store.")

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
        if self._conditional is not None:
            existed = self._conditional.delete(path)
            if not existed and not missing_ok:
                raise HoodieIOError(f"File {self.uri(path)!r} does not exist.")
            return existed
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

    @staticmethod
    def side_by_side(fn: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """``fn`` of each item, at most :data:`MAX_CONCURRENT_REQUESTS` at a time, in order.

        On an object store each small call is a round trip; asked one after another, a
        step touching a hundred partitions waits a hundred round trips."""
        return parallel_map(fn, items, MAX_CONCURRENT_REQUESTS, "hoodie-storage")

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        for st in self.list_dir(path, recursive=True):
            if not st.is_dir:
                yield st
