"""Errors of Spark's Python workers, turned back into the library's own: a bad key or schema
refused inside a write task reaches the driver as the text of Spark's exception, and the
caller (an operator, the CLI, a test) gets the :class:`HoodieKeyError` or
:class:`HoodieSchemaError` it would get from the Arrow engine."""

from __future__ import annotations

from airflow_hoodie.errors import HoodieKeyError, HoodieSchemaError

_HOODIE_ERRORS = {"HoodieKeyError": HoodieKeyError, "HoodieSchemaError": HoodieSchemaError}


def translate_job_error(exc: Exception) -> Exception:
    """The library error a Python worker raised, as that error on the driver: Spark hands it
    over as the text of a Py4J/Python exception, where the class would otherwise be lost."""
    text = str(exc)
    for name, cls in _HOODIE_ERRORS.items():
        if name in text:
            line = next((ln for ln in text.splitlines() if name + ":" in ln), text.splitlines()[-1] if text else "")
            return cls(line.split(name + ":", 1)[-1].strip() or text[-500:])
    return exc
