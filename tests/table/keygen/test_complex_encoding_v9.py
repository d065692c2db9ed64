"""Table version 9 locks the complex key generator's single-field encoding to ``field:value``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.table.keygen.builtin_key_generators import ComplexKeyGenerator
from airflow_hoodie.table.keygen.key_generator import KeyGenerator

RK = "hoodie.datasource.write.recordkey.field"
PP = "hoodie.datasource.write.partitionpath.field"
NEW = "hoodie.write.complex.keygen.new.encoding"
ROWS = pa.table({"id": [7, 8], "p": ["x", "y"]})


@pytest.mark.parametrize("version_key", ["hoodie.write.table.version", "hoodie.table.version"])
def test_version_9_ignores_the_new_encoding_flag(version_key):
    gen = ComplexKeyGenerator({RK: "id", PP: "p", NEW: "true", version_key: "9"})
    assert gen.record_keys(ROWS).to_pylist() == ["id:7", "id:8"]


@pytest.mark.parametrize("version", ["6", "8"])
def test_below_version_9_the_flag_still_chooses(version):
    gen = ComplexKeyGenerator({RK: "id", PP: "p", NEW: "true", "hoodie.write.table.version": version})
    assert gen.record_keys(ROWS).to_pylist() == ["7", "8"]
    plain = ComplexKeyGenerator({RK: "id", PP: "p", "hoodie.write.table.version": version})
    assert plain.record_keys(ROWS).to_pylist() == ["id:7", "id:8"]


def test_a_version_9_tables_own_properties_make_prefixed_keys():
    """A reader building keys from a version 9 table's hoodie.properties (virtual keys)."""
    table_props = {"hoodie.table.version": "9", "hoodie.table.keygenerator.type": "COMPLEX",
                   "hoodie.table.recordkey.fields": "id", "hoodie.table.partition.fields": "p", NEW: "true"}
    assert KeyGenerator.from_config(table_props).record_keys(ROWS).to_pylist() == ["id:7", "id:8"]
