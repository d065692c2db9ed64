"""Keys of the HTTP commit callback (Hudi's HoodieWriteCommitCallbackConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

register(
    ConfigKey("hoodie.write.commit.callback.on", "false", "call back after each commit"),
    ConfigKey("hoodie.write.commit.callback.class",
              "org.apache.hudi.callback.impl.HoodieWriteCommitHttpCallback", "only the HTTP callback is supported"),
    ConfigKey("hoodie.write.commit.callback.http.url", None, "callback URL"),
    ConfigKey("hoodie.write.commit.callback.http.api.key", "hudi_write_commit_http_callback", "HUDI-CALLBACK-KEY header"),
    ConfigKey("hoodie.write.commit.callback.http.timeout.seconds", "3", "request timeout"),
    ConfigKey("hoodie.write.commit.callback.http.custom.headers", "", "k1:v1;k2:v2"),
)
