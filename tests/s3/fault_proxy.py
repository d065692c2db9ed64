"""A small HTTP proxy in front of moto's S3 that injects faults, for the fault tests.

Each :class:`Fault` matches requests by method and a substring of the path and fires a
bounded number of times: ``reset`` closes the connection without an answer (a network
error), ``timeout`` holds the request longer than the client's timeout, then closes it,
``slowdown`` answers 503 SlowDown (S3's throttling reply). Everything else is forwarded
unchanged. Runs in a thread of the test process on 127.0.0.1; stopped by the test."""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")


@dataclass
class Fault:
    kind: str  # reset | timeout | slowdown
    method: str
    path_contains: str
    times: int  # bounded: fires at most this often
    hold_s: float = 2.0  # how long a timeout holds the request
    fired: int = 0


@dataclass
class Counts:
    by_method: dict[str, int] = field(default_factory=dict)


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []
        self._guard = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once: no delayed-ACK stalls

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _handle(self) -> None:
                body = self._body()
                fault = proxy._match(self.command, self.path)
                if fault is not None:
                    if fault.kind == "slowdown":
                        self.send_response(503)
                        self.send_header("Content-Type", "application/xml")
                        self.send_header("Content-Length", str(len(SLOWDOWN)))
                        self.end_headers()
                        self.wfile.write(SLOWDOWN)
                        return
                    if fault.kind == "timeout":
                        time.sleep(fault.hold_s)
                    self.close_connection = True  # reset, or a timeout's late hang-up
                    return
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
                headers["Content-Length"] = str(len(body))
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection", "date", "server"):
                        self.send_header(k, v)
                # a HEAD's answer has no body but tells the object's length
                length = resp.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", length or "0")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fault-proxy", daemon=True)

    def _match(self, method: str, path: str) -> Fault | None:
        with self._guard:
            self.requests.append((method, path))
            for f in self.faults:
                if f.fired < f.times and f.method == method and f.path_contains in path:
                    f.fired += 1
                    return f
        return None

    def inject(self, fault: Fault) -> Fault:
        with self._guard:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._guard:
            self.faults.clear()

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)


def request_type(method: str, path: str) -> str:
    """S3's request class of one proxied request: a GET of a bucket (no key) is a LIST;
    multipart POSTs are PUT class; a POST ?delete is a (batch) DELETE."""
    url = urlparse(path)
    key = url.path.lstrip("/").partition("/")[2]
    query = parse_qs(url.query, keep_blank_values=True)
    if method == "GET":
        return "LIST" if not key or "list-type" in query else "GET"
    if method == "POST":
        return "DELETE" if "delete" in query else "PUT"
    return method
