"""Hudi's HTTP commit callback settings (HoodieWriteCommitCallbackConfig), parsed once per write."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig

CALLBACK_ON = "hoodie.write.commit.callback.on"
CALLBACK_URL = "hoodie.write.commit.callback.http.url"
CALLBACK_API_KEY = "hoodie.write.commit.callback.http.api.key"
CALLBACK_HEADERS = "hoodie.write.commit.callback.http.custom.headers"
CALLBACK_TIMEOUT = "hoodie.write.commit.callback.http.timeout.seconds"


@dataclass(frozen=True)
class CommitCallbackSettings:
    """Hudi's HTTP commit callback (HoodieWriteCommitHttpCallback)."""

    enabled: bool = False
    url: str | None = None
    api_key: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 3.0

    @classmethod
    def from_config(cls, config: HoodieConfig) -> CommitCallbackSettings:
        headers = tuple((k.strip(), v.strip()) for k, _, v in
                        (pair.partition(":") for pair in (config.get(CALLBACK_HEADERS) or "").split(";") if ":" in pair))
        return cls(config.get_bool(CALLBACK_ON, False), config.get(CALLBACK_URL) or None,
                   config.get(CALLBACK_API_KEY) or "", headers, config.get_float(CALLBACK_TIMEOUT))
