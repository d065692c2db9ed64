"""Which class implements each key generator type: the table the factory picks from."""

from __future__ import annotations

from airflow_hoodie.table.keygen.builtin_key_generators import (
    ComplexKeyGenerator,
    GlobalDeleteKeyGenerator,
    NonpartitionedKeyGenerator,
    SimpleKeyGenerator,
)
from airflow_hoodie.table.keygen.custom_key_generator import CustomKeyGenerator
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.table.keygen.timestamp_key_generator import (
    TimestampBasedKeyGenerator,
)

KEY_GENERATOR_TYPES: dict[str, type[KeyGenerator]] = {
    "SIMPLE": SimpleKeyGenerator,
    "COMPLEX": ComplexKeyGenerator,
    "NON_PARTITION": NonpartitionedKeyGenerator,
    "TIMESTAMP": TimestampBasedKeyGenerator,
    "CUSTOM": CustomKeyGenerator,
    "GLOBAL_DELETE": GlobalDeleteKeyGenerator,
}


def generator_class(generator_type: str) -> type[KeyGenerator]:
    return KEY_GENERATOR_TYPES[generator_type]
