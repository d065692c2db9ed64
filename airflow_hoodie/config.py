"""Hudi's ``hoodie.*`` settings: one registry of known keys with Hudi's defaults.

Each action module registers the keys it understands (with Hudi's own names and default
values), so a job can report every ``hoodie.*`` key nobody understands instead of
silently ignoring a typo like ``hoodie.cleaner.commits.retaind``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from airflow_hoodie.errors import HoodieConfigError


@dataclass(frozen=True)
class ConfigKey:
    key: str
    default: str | None
    doc: str = ""
    alternatives: tuple[str, ...] = ()


_REGISTRY: dict[str, ConfigKey] = {}
_PREFIXES: set[str] = set()


def register(*keys: ConfigKey) -> None:
    for k in keys:
        _REGISTRY[k.key] = k
        for alt in k.alternatives:
            _REGISTRY.setdefault(alt, ConfigKey(alt, k.default, k.doc))


def register_prefix(prefix: str) -> None:
    """Accept every key under ``prefix`` (open-ended families like ``hoodie.write.commit.callback.``)."""
    _PREFIXES.add(prefix)


def known(key: str) -> bool:
    return key in _REGISTRY or any(key.startswith(p) for p in _PREFIXES)


def default(key: str) -> str | None:
    entry = _REGISTRY.get(key)
    return entry.default if entry else None


class HoodieConfig:
    """User settings layered over Hudi's defaults, with typed getters."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = {k: str(v) for k, v in (values or {}).items()}

    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self._values if k.startswith("hoodie.") and not known(k))

    def as_dict(self) -> dict[str, str]:
        return dict(self._values)

    def with_values(self, extra: Mapping[str, str]) -> "HoodieConfig":
        merged = dict(self._values)
        merged.update({k: str(v) for k, v in extra.items()})
        return HoodieConfig(merged)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def get(self, key: str, fallback: str | None = None) -> str | None:
        entry = _REGISTRY.get(key)
        if key in self._values:
            return self._values[key]
        if entry is not None:
            for alt in entry.alternatives:
                if alt in self._values:
                    return self._values[alt]
            if entry.default is not None:
                return entry.default
        return fallback

    def require(self, key: str) -> str:
        value = self.get(key)
        if value is None or value == "":
            raise HoodieConfigError(f"Setting {key!r} is required; pass it with --hoodie-conf {key}=...")
        return value

    def get_int(self, key: str, fallback: int | None = None) -> int:
        raw = self.get(key)
        if raw is None:
            if fallback is None:
                raise HoodieConfigError(f"Setting {key!r} is required (an integer).")
            return fallback
        try:
            return int(raw)
        except ValueError:
            raise HoodieConfigError(f"Setting {key}={raw!r} must be an integer.") from None

    def get_float(self, key: str, fallback: float | None = None) -> float:
        raw = self.get(key)
        if raw is None:
            if fallback is None:
                raise HoodieConfigError(f"Setting {key!r} is required (a number).")
            return fallback
        try:
            return float(raw)
        except ValueError:
            raise HoodieConfigError(f"Setting {key}={raw!r} must be a number.") from None

    def get_bool(self, key: str, fallback: bool | None = None) -> bool:
        raw = self.get(key)
        if raw is None:
            if fallback is None:
                raise HoodieConfigError(f"Setting {key!r} is required (true/false).")
            return fallback
        low = raw.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
        raise HoodieConfigError(f"Setting {key}={raw!r} must be true or false.")

    def get_list(self, key: str) -> list[str]:
        raw = self.get(key)
        if not raw:
            return []
        return [p.strip() for p in raw.split(",") if p.strip()]


def parse_properties(text: str) -> dict[str, str]:
    """Parse a Java-style ``.properties`` file (the format of ``--props``)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in line:
                k, _, v = line.partition(sep)
                out[k.strip()] = v.strip()
                break
        else:
            out[line] = ""
    return out


def parse_key_values(pairs: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise HoodieConfigError(f"--hoodie-conf expects KEY=VALUE, got {pair!r}.")
        k, _, v = pair.partition("=")
        out[k.strip()] = v.strip()
    return out
