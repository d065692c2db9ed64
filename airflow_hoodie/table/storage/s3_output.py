"""An S3 output stream that uploads a small file in one PutObject.

pyarrow's S3 output stream always runs a multipart upload: three requests (create, part,
complete) even for a marker-sized log file. Most files a Hudi write makes are far below one
part, so this stream buffers up to ``threshold`` bytes and uploads them with one PutObject at
close; a file that grows past it moves to pyarrow's multipart stream, which carries on from
the buffered bytes. Either way the object appears whole, at close, or not at all.
"""

from __future__ import annotations

import io
from typing import Any, Callable

#: files up to this size go up in one PutObject (S3 allows 5 GB; memory is the limit here)
SINGLE_PUT_THRESHOLD = 16 * 1024 * 1024


class BufferedS3Output(io.RawIOBase):
    """A writable file object; wrap it in ``pyarrow.PythonFile(..., mode="w")``."""

    def __init__(self, put: Callable[[bytes], Any], open_stream: Callable[[], Any],
                 threshold: int = SINGLE_PUT_THRESHOLD) -> None:
        super().__init__()
        self._put, self._open_stream, self._threshold = put, open_stream, threshold
        self._buf: io.BytesIO | None = io.BytesIO()
        self._stream: Any = None
        self._pos = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        n = len(view)
        if self._stream is not None:
            self._stream.write(view)
        else:
            assert self._buf is not None
            self._buf.write(view)
            if self._buf.tell() > self._threshold:
                self._stream = self._open_stream()
                self._stream.write(self._buf.getbuffer())
                self._buf = None
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._stream is not None:
                self._stream.close()
            elif self._buf is not None:
                self._put(self._buf.getvalue())
        finally:
            self._buf = None
            super().close()
