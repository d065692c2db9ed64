"""The placeholders and separators Hudi's key generators make keys and paths of, and their
class names, declared once. Their settings are in :mod:`airflow_hoodie.config_keys.keygen`.
"""

from __future__ import annotations


DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"


NULL_RECORDKEY_PLACEHOLDER = "__null__"


EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"


RECORD_KEY_PARTS_SEPARATOR = ","


COMPOSITE_KEY_VALUE_SEPARATOR = ":"


PARTITION_PATH_SEPARATOR = "/"


KEYGEN_PACKAGE = "org.apache.hudi.keygen."


CLASS_TO_TYPE = {
    "SimpleKeyGenerator": "SIMPLE",
    "SimpleAvroKeyGenerator": "SIMPLE",
    "ComplexKeyGenerator": "COMPLEX",
    "ComplexAvroKeyGenerator": "COMPLEX",
    "NonpartitionedKeyGenerator": "NON_PARTITION",
    "NonpartitionedAvroKeyGenerator": "NON_PARTITION",
    "TimestampBasedKeyGenerator": "TIMESTAMP",
    "TimestampBasedAvroKeyGenerator": "TIMESTAMP",
    "CustomKeyGenerator": "CUSTOM",
    "CustomAvroKeyGenerator": "CUSTOM",
    "GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
    "GlobalAvroDeleteKeyGenerator": "GLOBAL_DELETE",
}
#: the key generator types Hudi knows (hoodie.datasource.write.keygenerator.type)
KEYGEN_TYPES = frozenset(CLASS_TO_TYPE.values())
#: the class Hudi 1.x names for each type (KeyGeneratorType.getClassName): a version 8/9 table
#: records only ``hoodie.table.keygenerator.type``, a version 6 table only the class
TYPE_TO_CLASS = {
    "SIMPLE": KEYGEN_PACKAGE + "SimpleKeyGenerator",
    "COMPLEX": KEYGEN_PACKAGE + "ComplexKeyGenerator",
    "NON_PARTITION": KEYGEN_PACKAGE + "NonpartitionedKeyGenerator",
    "TIMESTAMP": KEYGEN_PACKAGE + "TimestampBasedKeyGenerator",
    "CUSTOM": KEYGEN_PACKAGE + "CustomKeyGenerator",
    "GLOBAL_DELETE": KEYGEN_PACKAGE + "GlobalDeleteKeyGenerator",
}

