"""Commit callback over HTTP, as Hudi's HoodieWriteCommitHttpCallback.

After a write commits, Hudi POSTs a JSON message (commitTime, tableName, basePath, ...)
to ``hoodie.write.commit.callback.http.url`` with the ``HUDI-CALLBACK-KEY`` header set
from ``hoodie.write.commit.callback.http.api.key``. A failing callback never undoes the
commit: the data is committed, so we warn (Hudi logs the failure too).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from typing import Any, Mapping

from airflow_hoodie.settings.commit_callback import CommitCallbackSettings

API_KEY_HEADER = "HUDI-CALLBACK-KEY"


def callback_message(table_name: str, base_path: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """HoodieWriteCommitCallbackMessage fields plus our write totals."""
    return {
        "commitTime": result.get("instant"),
        "tableName": table_name,
        "basePath": base_path,
        "commitActionType": result.get("action"),
        "hoodieWriteStat": None,
        "extraMetadata": {k: result.get(k) for k in ("operation", "inserts", "updates", "deletes",
                                                      "files_written", "bytes_written")},
    }


def send_commit_callback(settings: CommitCallbackSettings, table_name: str, base_path: str,
                         result: Mapping[str, Any]) -> bool:
    """POST the commit message; returns whether the endpoint answered 2xx."""
    url = settings.url
    if not url:
        print("WARNING: hoodie.write.commit.callback.on=true but hoodie.write.commit.callback.http.url is not set",
              file=sys.stderr)
        return False
    body = json.dumps(callback_message(table_name, base_path, result)).encode()
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/json;charset=utf-8")
    req.add_header(API_KEY_HEADER, settings.api_key)
    for k, v in settings.headers:
        req.add_header(k, v)
    timeout = settings.timeout_s
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user-configured URL
            ok = 200 <= resp.status < 300
    except (urllib.error.URLError, OSError) as exc:
        print(f"WARNING: commit callback to {url} failed: {exc}", file=sys.stderr)
        return False
    if not ok:
        print(f"WARNING: commit callback to {url} answered {resp.status}", file=sys.stderr)
    return ok
