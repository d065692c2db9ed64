"""Avro codecs for Hudi's timeline metadata (plans, clean/rollback/savepoint metadata, archive entries).

Hudi stores every Avro-typed timeline file (``.compaction.requested``, ``.clean.requested``,
``.clean``, ``.rollback``, ``.replacecommit.requested``, ``.savepoint`` ...) as an Avro
*object container file* holding exactly one record: magic ``Obj\\x01``, a metadata map with
the single key ``avro.schema`` (no ``avro.codec`` entry, i.e. the null codec), a random
16-byte sync marker, then one block with one record. The embedded schema is the Java
``Schema.toString()`` form of the generated class: named types inlined at first use,
``"avro.java.string": "String"`` on strings and maps. We write the same bytes layout so
Hudi, hudi-rs and we read each other's files.

The schemas themselves are data: ``avro_schemas/*.avsc`` hold the facts of Hudi 0.14/0.15
(``hudi-common/src/main/avro``): record names, namespace ``org.apache.hudi.avro.model``, field
order, types and defaults. Files reference each other's named types by name (as Hudi's do);
this module loads all of them into one registry and renders self-contained schemas.
"""

from __future__ import annotations

import copy
import io
import json
import os
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable

import fastavro
from fastavro.schema import parse_schema

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieSchemaError

NAMESPACE = "org.apache.hudi.avro.model"
MAGIC = b"Obj\x01"
SCHEMA_DIR = "avro_schemas"

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})
# Keys Java's Schema parser treats as reserved (everything else on a type is a "prop").
_RESERVED = frozenset(
    {"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
)
_FIELD_RESERVED = frozenset({"default", "doc", "name", "order", "type", "aliases"})

# Which schema each timeline file holds (Hudi's TimelineMetadataUtils), keyed by
# (action, state) with state one of "requested", "inflight", "completed".
SCHEMA_FOR_INSTANT_FILE: dict[tuple[str, str], str] = {
    ("compaction", "requested"): "HoodieCompactionPlan",
    ("compaction", "inflight"): "HoodieCompactionPlan",
    ("logcompaction", "requested"): "HoodieCompactionPlan",
    ("logcompaction", "inflight"): "HoodieCompactionPlan",
    ("clean", "requested"): "HoodieCleanerPlan",
    ("clean", "inflight"): "HoodieCleanerPlan",
    ("clean", "completed"): "HoodieCleanMetadata",
    ("replacecommit", "requested"): "HoodieRequestedReplaceMetadata",
    ("rollback", "requested"): "HoodieRollbackPlan",
    ("rollback", "completed"): "HoodieRollbackMetadata",
    ("savepoint", "completed"): "HoodieSavepointMetadata",
    ("restore", "requested"): "HoodieRestorePlan",
    ("restore", "completed"): "HoodieRestoreMetadata",
    ("indexing", "requested"): "HoodieIndexPlan",
    ("indexing", "inflight"): "HoodieIndexPlan",
    ("indexing", "completed"): "HoodieIndexCommitMetadata",
}


# ---------------------------------------------------------------------------- registry
def _full_name(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _collect(node: Any, namespace: str | None, defs: dict[str, tuple[dict, str | None]]) -> None:
    """Record every named type defined (inline or top level) in ``node``."""
    if isinstance(node, list):
        for item in node:
            _collect(item, namespace, defs)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind in _NAMED:
        full = _full_name(node["name"], node.get("namespace", namespace))
        own_ns = full.rsplit(".", 1)[0] if "." in full else None
        if full in defs and defs[full][0] != node:
            raise HoodieSchemaError(f"Avro type {full} is defined twice with different bodies")
        defs[full] = (node, own_ns)
        for field in node.get("fields", ()):
            _collect(field["type"], own_ns, defs)
        return
    if kind == "array":
        _collect(node.get("items"), namespace, defs)
    elif kind == "map":
        _collect(node.get("values"), namespace, defs)
    elif isinstance(kind, (dict, list)):
        _collect(kind, namespace, defs)


@lru_cache(maxsize=1)
def _registry() -> dict[str, tuple[dict, str | None]]:
    """All named types of ``avro_schemas/*.avsc``: full name -> (raw definition, its namespace)."""
    defs: dict[str, tuple[dict, str | None]] = {}
    folder = resources.files(__package__).joinpath(SCHEMA_DIR)
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".avsc"):
            continue
        try:
            raw = json.loads(entry.read_text(encoding="utf-8"))
        except ValueError as exc:  # pragma: no cover - packaging bug, not user input
            raise HoodieSchemaError(f"Bundled Avro schema {entry.name} is not valid JSON: {exc}") from exc
        _collect(raw, None, defs)
    return defs


def schema_names() -> list[str]:
    """Short names of every bundled named type (records of Hudi's metadata model)."""
    return sorted(full.rsplit(".", 1)[-1] for full in _registry())


def _resolve_name(name: str) -> str:
    defs = _registry()
    if name in defs:
        return name
    full = _full_name(name, NAMESPACE)
    if full in defs:
        return full
    raise HoodieSchemaError(
        f"Unknown Hudi Avro schema {name!r}; known schemas: {', '.join(schema_names())}"
    )


def _render(node: Any, namespace: str | None, seen: set[str], java: bool) -> Any:
    """Self-contained schema for ``node``: named types inlined at first use, by name after.

    With ``java=True`` the output mirrors Java's ``Schema.toString()`` of Hudi's generated
    classes (key order, ``avro.java.string`` props), which is what Hudi embeds in files.
    """
    if isinstance(node, str):
        if node in _PRIMITIVES:
            if java and node == "string":
                return {"type": "string", "avro.java.string": "String"}
            return node
        full = _full_name(node, namespace)
        if full not in _registry():
            full = _resolve_name(node)
        if full in seen:
            ns = full.rsplit(".", 1)[0] if "." in full else None
            return full.rsplit(".", 1)[-1] if ns == namespace else full
        return _render_named(_registry()[full][0], full, namespace, seen, java)
    if isinstance(node, list):
        return [_render(item, namespace, seen, java) for item in node]
    kind = node["type"]
    props = {k: v for k, v in node.items() if k not in _RESERVED}
    if kind in _NAMED:
        full = _full_name(node["name"], node.get("namespace", namespace))
        if full in seen:
            return _render(full, namespace, seen, java)
        return _render_named(node, full, namespace, seen, java)
    if kind == "array":
        out: dict[str, Any] = {"type": "array", "items": _render(node["items"], namespace, seen, java)}
        out.update(props)
        return out
    if kind == "map":
        out = {"type": "map", "values": _render(node["values"], namespace, seen, java)}
        out.update(props)
        if java:
            out["avro.java.string"] = "String"
        return out
    if kind in _PRIMITIVES:
        out = {"type": kind}
        out.update(props)
        if java and kind == "string":
            out["avro.java.string"] = "String"
        if len(out) == 1:
            return kind
        return out
    # {"type": <name or nested schema>} wrapper.
    return _render(kind, namespace, seen, java)


def _render_named(node: dict, full: str, enclosing_ns: str | None, seen: set[str], java: bool) -> dict:
    seen.add(full)
    own_ns, _, short = full.rpartition(".")
    out: dict[str, Any] = {"type": node["type"], "name": short}
    if own_ns and own_ns != enclosing_ns:
        out["namespace"] = own_ns
    if "doc" in node:
        out["doc"] = node["doc"]
    if node["type"] in ("record", "error"):
        fields = []
        for field in node["fields"]:
            rendered: dict[str, Any] = {
                "name": field["name"],
                "type": _render(field["type"], own_ns or None, seen, java),
            }
            if "doc" in field:
                rendered["doc"] = field["doc"]
            if "default" in field:
                rendered["default"] = field["default"]
            rendered.update({k: v for k, v in field.items() if k not in _FIELD_RESERVED})
            fields.append(rendered)
        out["fields"] = fields
    elif node["type"] == "enum":
        out["symbols"] = node["symbols"]
    elif node["type"] == "fixed":
        out["size"] = node["size"]
    out.update({k: v for k, v in node.items() if k not in _RESERVED})
    return out


def schema_dict(name: str, java: bool = False) -> dict:
    """Self-contained JSON-able schema of ``name`` (short or full name)."""
    full = _resolve_name(name)
    return _render(full, None, set(), java)


@lru_cache(maxsize=None)
def schema_json(name: str) -> str:
    """The schema text Hudi embeds in a container file of ``name`` (Java toString form)."""
    return json.dumps(schema_dict(name, java=True), separators=(",", ":"), ensure_ascii=False)


@lru_cache(maxsize=None)
def get_schema(name: str) -> dict:
    """fastavro-parsed schema of a Hudi metadata record (``"HoodieCleanerPlan"`` ...).

    Do not mutate the returned object; it is shared.
    """
    return parse_schema(schema_dict(name))


# ---------------------------------------------------------------------------- containers
def zigzag_long(value: int) -> bytes:
    """Avro's variable-length zig-zag encoding of a long."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def avro_bytes(data: bytes) -> bytes:
    """Avro ``bytes``/``string``: the length, then the data."""
    return zigzag_long(len(data)) + data


def encode_datum(schema_name: str, record: dict) -> bytes:
    """Avro binary encoding of one record without any container (as in log delete blocks)."""
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, get_schema(schema_name), record)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HoodieSchemaError(
            f"Record does not match Hudi's {schema_name} schema: {exc}. "
            f"Check field names and types against avro_schemas/."
        ) from exc
    return buf.getvalue()


def decode_datum(
    schema_name: str, data: bytes, writer_schema: dict | None = None, return_record_name: bool = False
) -> dict:
    """Decode one schemaless Avro record (inverse of :func:`encode_datum`)."""
    reader = get_schema(schema_name)
    try:
        return fastavro.schemaless_reader(
            io.BytesIO(data),
            writer_schema if writer_schema is not None else reader,
            reader if writer_schema is not None else None,
            return_record_name=return_record_name,
        )
    except Exception as exc:  # fastavro raises many types on garbage input
        raise HoodieCorruptedDataError(
            f"Cannot decode {len(data)} bytes as Avro {schema_name}: {type(exc).__name__}: {exc}"
        ) from exc


def serialize(schema_name: str, record: dict, sync_marker: bytes | None = None) -> bytes:
    """One-record Avro container file, laid out as Hudi's TimelineMetadataUtils writes it."""
    body = encode_datum(schema_name, record)
    sync = sync_marker if sync_marker is not None else os.urandom(16)
    if len(sync) != 16:
        raise ValueError("an Avro sync marker is 16 bytes")
    header = (
        MAGIC
        + zigzag_long(1)
        + avro_bytes(b"avro.schema")
        + avro_bytes(schema_json(schema_name).encode("utf-8"))
        + zigzag_long(0)
        + sync
    )
    return header + zigzag_long(1) + zigzag_long(len(body)) + body + sync


def _record_full_name(schema: Any) -> str | None:
    if isinstance(schema, dict) and schema.get("type") in ("record", "error"):
        return schema.get("name")
    return None


def read_records(data: bytes, schema_name: str | None = None, what: str = "") -> tuple[list[dict], dict]:
    """All records of a container file plus its writer schema (resolved to ours when named)."""
    label = what or "Avro metadata"
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("expected the file's bytes")
    data = bytes(data)
    if not data:
        raise HoodieCorruptedDataError(
            f"{label} is empty: expected an Avro container file"
            + (f" holding a {schema_name}" if schema_name else "")
            + ". The instant file was probably written by an interrupted process; "
            "roll the instant back or delete the empty file."
        )
    if not data.startswith(MAGIC):
        raise HoodieCorruptedDataError(
            f"{label} is not an Avro container file (starts with {data[:4]!r}, expected {MAGIC!r}); "
            "the file is corrupt or is not one of Hudi's Avro metadata files."
        )
    reader_schema = get_schema(schema_name) if schema_name else None
    try:
        reader = fastavro.reader(io.BytesIO(data), reader_schema=reader_schema)
        writer_schema = reader.writer_schema
        if schema_name:
            expected = _resolve_name(schema_name)
            found = _record_full_name(writer_schema)
            if found is not None and found != expected:
                raise HoodieCorruptedDataError(
                    f"{label} holds a {found}, not the expected {expected}"
                )
        records = list(reader)
    except HoodieCorruptedDataError:
        raise
    except Exception as exc:  # fastavro raises many types on garbage input
        raise HoodieCorruptedDataError(
            f"{label} is a damaged Avro container file"
            + (f" (expected {schema_name})" if schema_name else "")
            + f": {type(exc).__name__}: {exc}"
        ) from exc
    return records, writer_schema


def deserialize(data: bytes | str, schema_name: str | bytes | None = None) -> dict:
    """The one record of a Hudi Avro metadata file, as a plain dict.

    ``schema_name`` (e.g. ``"HoodieCleanerPlan"``) makes the record resolve to our schema
    (fields absent in older writers get their defaults, unknown ones are dropped); without
    it the writer schema embedded in the file is used. ``deserialize(name, data)`` (name
    first) is accepted as well.
    """
    if isinstance(data, str) and isinstance(schema_name, (bytes, bytearray, memoryview)):
        data, schema_name = schema_name, data
    records, _ = read_records(data, schema_name)  # type: ignore[arg-type]
    if not records:
        raise HoodieCorruptedDataError(
            "Avro metadata file holds no record"
            + (f" (expected one {schema_name})" if schema_name else "")
            + "; the file is truncated or was written by an interrupted process."
        )
    return records[0]


def writer_schema_name(data: bytes) -> str | None:
    """Full record name of the schema embedded in a container file (None if not a record)."""
    _, writer = read_records(data)
    return _record_full_name(writer)


def default_record(schema_name: str, **values: Any) -> dict:
    """A record of ``schema_name`` with every field at its default, overridden by ``values``.

    Fields without a default must be given; raises HoodieSchemaError naming the missing ones.
    """
    schema = schema_dict(schema_name)
    out: dict[str, Any] = {}
    missing = []
    for field in schema["fields"]:
        name = field["name"]
        if name in values:
            out[name] = values.pop(name)
        elif "default" in field:
            out[name] = copy.deepcopy(field["default"])
        else:
            missing.append(name)
    if values:
        raise HoodieSchemaError(f"{schema_name} has no field(s) {sorted(values)}")
    if missing:
        raise HoodieSchemaError(f"{schema_name} needs value(s) for {missing} (no default in Hudi's schema)")
    return out


def iter_schema_files() -> Iterable[str]:
    """Names of the bundled .avsc files (for packaging checks)."""
    folder = resources.files(__package__).joinpath(SCHEMA_DIR)
    return sorted(e.name for e in folder.iterdir() if e.name.endswith(".avsc"))
