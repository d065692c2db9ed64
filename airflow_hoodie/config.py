"""Hudi's ``hoodie.*`` settings: one registry of known keys with Hudi's defaults.

Every key we understand is declared once, with Hudi's own name, default and aliases, in the
catalog :mod:`airflow_hoodie.config_keys`, so a job can report every ``hoodie.*`` key nobody
understands instead of silently ignoring a typo like ``hoodie.cleaner.commits.retaind``.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, TypeVar

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.hudi_config_keys import hudi_config_keys

T = TypeVar("T")


@dataclass(frozen=True)
class ConfigKey:
    key: str
    default: str | None
    doc: str = ""
    alternatives: tuple[str, ...] = ()


_REGISTRY: dict[str, ConfigKey] = {}
_ALIAS_OF: dict[str, str] = {}
#: groups of keys that name one setting beyond a key's registered alternatives (the ordering
#: field's spellings across Hudi versions): a write giving two of them different values is refused
_SPELLINGS: list[tuple[str, ...]] = []
_PREFIXES: set[str] = set()
_LOADED = False


def register(*keys: ConfigKey) -> None:
    """Declare keys, each once, in the catalog (:mod:`airflow_hoodie.config_keys`). A second
    declaration of a key or alias raises: two owners are how defaults came to depend on import order."""
    for k in keys:
        for name in (k.key, *k.alternatives):
            if name in _REGISTRY:
                owner = _REGISTRY[name]
                raise HoodieConfigError(
                    f"{name} is declared twice ({owner.key!r} and {k.key!r}); a key belongs to one module: "
                    "import it from airflow_hoodie.config_keys instead of declaring it again.")
        _REGISTRY[k.key] = k
        for alt in k.alternatives:
            _REGISTRY[alt] = ConfigKey(alt, k.default, k.doc)
            _ALIAS_OF[alt] = k.key


def register_spellings(*keys: str) -> None:
    """Declare ``keys`` as spellings of one setting (see :meth:`HoodieConfig.check_spellings_agree`)."""
    _SPELLINGS.append(tuple(keys))


def spelling_groups() -> list[tuple[str, ...]]:
    """Every group of keys that spell one setting: each key with its registered alternatives,
    and the groups declared with :func:`register_spellings`."""
    load_registry()
    groups = [(k.key, *k.alternatives) for name, k in _REGISTRY.items() if k.alternatives and name == k.key]
    return groups + list(_SPELLINGS)


def _same_value(a: str, b: str) -> bool:
    """Two values of one setting agree: equal, or the same comma-separated list of names."""
    return a == b or [p.strip() for p in a.split(",")] == [p.strip() for p in b.split(",")]


def register_prefix(prefix: str) -> None:
    """Accept every key under ``prefix`` (open-ended families like ``hoodie.write.commit.callback.``)."""
    _PREFIXES.add(prefix)


def known(key: str) -> bool:
    load_registry()
    return key in _REGISTRY or any(key.startswith(p) for p in _PREFIXES)


def default(key: str) -> str | None:
    load_registry()
    entry = _REGISTRY.get(key)
    return entry.default if entry else None


#: the catalog of every key we read: leaf modules holding only declarations, so loading it
#: imports no code that uses the keys (no boto3, kazoo or pyspark for a lookup)
CATALOG_PACKAGE = "airflow_hoodie.config_keys"


def load_registry() -> None:
    """Load the whole key catalog, once, before the first lookup: a default must not depend
    on which modules the caller happened to import."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    package = importlib.import_module(CATALOG_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{CATALOG_PACKAGE}.{module.name}")


def _edits(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count one, as typists make them)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def suggestion_for(key: str) -> str | None:
    """The key an unknown ``key`` was most likely meant to be: the same dotted path as one
    we read or one of Hudi's own, with one part misspelled (at most two edits, and at most
    a third of the part). A real Hudi key, or one unlike any known key, gets none."""

    if key in hudi_config_keys():
        return None
    parts = key.split(".")
    best: tuple[int, str] | None = None
    for candidate in sorted(set(_REGISTRY) | hudi_config_keys()):
        other = candidate.split(".")
        if len(other) != len(parts):
            continue
        diff = [(x, y) for x, y in zip(parts, other) if x != y]
        if len(diff) != 1:
            continue
        x, y = diff[0]
        distance = _edits(x, y)
        if distance <= 2 and distance * 3 <= max(len(x), len(y)) and (best is None or distance < best[0]):
            best = (distance, candidate)
    return best[1] if best else None


class HoodieConfig:
    """User settings layered over Hudi's defaults, with typed getters."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = {k: str(v) for k, v in (values or {}).items()}

    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self._values if k.startswith("hoodie.") and not known(k))

    def check_spelling(self) -> None:
        """Refuse ``hoodie.*`` keys that look like typos of known ones, before any work:
        a misspelled ``hoodie.table.type`` would otherwise create a table of the default
        type, and a misspelled record-key field fail only after Spark started."""
        load_registry()
        self.check_spellings_agree()
        typos = [(k, suggestion_for(k)) for k in self.unknown_keys()]
        typos = [(k, s) for k, s in typos if s]
        if typos:
            raise HoodieConfigError("; ".join(f"{k} is not a setting airflow-hoodie knows: did you mean {s}?"
                                              for k, s in typos) + ". Fix the key in hoodie_conf (or the connection's "
                                    "extra); nothing was submitted.")

    def check_spellings_agree(self) -> None:
        """Refuse two spellings of one setting given different values (``hoodie.table.ordering.fields``
        and ``hoodie.datasource.write.precombine.field``, a key and its alias): which one wins
        differs between readers and Hudi versions, so one of them would be ignored silently."""
        for group in spelling_groups():
            given = [(k, self._values[k]) for k in group if k in self._values]
            for (k1, v1), (k2, v2) in zip(given, given[1:]):
                if not _same_value(v1, v2):
                    raise HoodieConfigError(
                        f"{k1}={v1!r} and {k2}={v2!r} are two spellings of one setting with different values; "
                        f"nothing was done. Keep one of them (or give both the same value).")

    def as_dict(self) -> dict[str, str]:
        return dict(self._values)

    def with_values(self, extra: Mapping[str, str]) -> "HoodieConfig":
        merged = dict(self._values)
        merged.update({k: str(v) for k, v in extra.items()})
        return HoodieConfig(merged)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def get(self, key: str, fallback: str | None = None) -> str | None:
        load_registry()
        if key in self._values:
            return self._values[key]
        if key in _ALIAS_OF:  # an alias reads what its key was set to
            return self.get(_ALIAS_OF[key], fallback)
        entry = _REGISTRY.get(key)
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

    def _typed(self, key: str, fallback: T | None, parse: Callable[[str], T], what: str) -> T:
        raw = self.get(key)
        if raw is None:
            if fallback is None:
                raise HoodieConfigError(f"Setting {key!r} is required ({what}).")
            return fallback
        try:
            return parse(raw)
        except ValueError:
            raise HoodieConfigError(f"Setting {key}={raw!r} must be {what}.") from None

    def get_int(self, key: str, fallback: int | None = None) -> int:
        return self._typed(key, fallback, int, "an integer")

    def get_float(self, key: str, fallback: float | None = None) -> float:
        return self._typed(key, fallback, float, "a number")

    def get_bool(self, key: str, fallback: bool | None = None) -> bool:
        raw = self.get(key)
        if raw is None:
            if fallback is None:
                raise HoodieConfigError(f"Setting {key!r} is required (true/false).")
            return fallback
        return parse_bool(key, raw)

    def get_list(self, key: str) -> list[str]:
        raw = self.get(key)
        if not raw:
            return []
        return [p.strip() for p in raw.split(",") if p.strip()]


def parse_bool(key: str, raw: str | bool) -> bool:
    """A boolean setting as Hudi's writers read it, or refused.

    Hudi parses booleans with Java's ``Boolean.parseBoolean``: ``true`` in any case is true,
    every other value (``yes``, ``1``, ``True `` with a blank) is false. We read ``true`` and
    ``false`` (any case) the same way; any other value is refused by name instead of being
    applied one way here and read the other way by the next Hudi writer (or stored and read
    back so)."""
    text = str(raw)
    if text.lower() == "true":
        return True
    if text.lower() == "false":
        return False
    raise HoodieConfigError(
        f"Setting {key}={text!r} is not true or false. Hudi's writers read any value but 'true' (any case, "
        f"without blanks) as false, so {text!r} would not mean what it seems to; nothing was done. "
        f"Write {key}=true or {key}=false.")


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
