"""Keys of Hudi's key generators (KeyGeneratorOptions, TimestampBasedAvroKeyGenerator.Config)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

RECORDKEY_FIELD = ConfigKey(
    "hoodie.datasource.write.recordkey.field",
    None,
    "Comma-separated record key field(s); nested fields as a.b.",
    ("hoodie.table.recordkey.fields",),
)

PARTITIONPATH_FIELD = ConfigKey(
    "hoodie.datasource.write.partitionpath.field",
    None,
    "Comma-separated partition path field(s); for CustomKeyGenerator each as field:SIMPLE|TIMESTAMP.",
    ("hoodie.table.partition.fields",),
)

KEYGENERATOR_CLASS = ConfigKey(
    "hoodie.datasource.write.keygenerator.class",
    None,
    "Key generator class (org.apache.hudi.keygen.*); inferred from the key fields when unset.",
    ("hoodie.table.keygenerator.class", "hoodie.bootstrap.keygen.class"),
)

KEYGENERATOR_TYPE = ConfigKey(
    "hoodie.datasource.write.keygenerator.type",
    None,
    "Key generator type: SIMPLE, COMPLEX, TIMESTAMP, CUSTOM, NON_PARTITION, GLOBAL_DELETE.",
    ("hoodie.table.keygenerator.type", "hoodie.bootstrap.keygen.type"),
)

HIVE_STYLE = ConfigKey(
    "hoodie.datasource.write.hive_style_partitioning",
    "false",
    "Partition directories named field=value.",
)

URL_ENCODE = ConfigKey(
    "hoodie.datasource.write.partitionpath.urlencode",
    "false",
    "Escape partition path values like Hive's FileUtils.escapePathName.",
)

CONSISTENT_LOGICAL_TIMESTAMP = ConfigKey(
    "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled",
    "false",
    "Render timestamp-millis/micros key fields as java.sql.Timestamp text instead of raw numbers.",
)

COMPLEX_NEW_ENCODING = ConfigKey(
    "hoodie.write.complex.keygen.new.encoding",
    "false",
    "ComplexKeyGenerator with one record key field: true writes the bare value (Hudi 0.14.1/0.15.0 "
    "behaviour), false writes field:value (Hudi 0.14.0 and the fixed releases).",
)

COMPLEX_TABLE_ENCODING = ConfigKey(
    "hoodie.table.complex.keygen.encoding",
    None,
    "Table-recorded single-field complex key encoding: FIELD_PREFIXED or VALUE_ONLY (wins over the writer flag).",
)

TS_TYPE = ConfigKey(
    "hoodie.keygen.timebased.timestamp.type",
    None,
    "UNIX_TIMESTAMP, DATE_STRING, MIXED, EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR.",
    ("hoodie.deltastreamer.keygen.timebased.timestamp.type",),
)

TS_SCALAR_UNIT = ConfigKey(
    "hoodie.keygen.timebased.timestamp.scalar.time.unit",
    "SECONDS",
    "Time unit of SCALAR timestamps (java.util.concurrent.TimeUnit name).",
    ("hoodie.deltastreamer.keygen.timebased.timestamp.scalar.time.unit",),
)

TS_INPUT_FORMAT = ConfigKey(
    "hoodie.keygen.timebased.input.dateformat",
    "",
    "Joda pattern(s) of DATE_STRING/MIXED partition values.",
    ("hoodie.deltastreamer.keygen.timebased.input.dateformat",),
)

TS_INPUT_FORMAT_DELIMITER = ConfigKey(
    "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex",
    ",",
    "Regex separating several input date formats.",
    ("hoodie.deltastreamer.keygen.timebased.input.dateformat.list.delimiter.regex",),
)

TS_INPUT_TZ = ConfigKey(
    "hoodie.keygen.timebased.input.timezone",
    "",
    "Time zone of input date strings without an offset.",
    ("hoodie.deltastreamer.keygen.timebased.input.timezone",),
)

TS_OUTPUT_FORMAT = ConfigKey(
    "hoodie.keygen.timebased.output.dateformat",
    "",
    "Joda pattern of the partition path.",
    ("hoodie.deltastreamer.keygen.timebased.output.dateformat",),
)

TS_OUTPUT_TZ = ConfigKey(
    "hoodie.keygen.timebased.output.timezone",
    "",
    "Time zone the partition path is rendered in.",
    ("hoodie.deltastreamer.keygen.timebased.output.timezone",),
)

TS_TZ = ConfigKey(
    "hoodie.keygen.timebased.timezone",
    "",
    "Time zone of both input and output (wins over input/output time zone).",
    ("hoodie.deltastreamer.keygen.timebased.timezone",),
)

DATETIME_PARSER = ConfigKey(
    "hoodie.keygen.datetime.parser.class",
    "org.apache.hudi.keygen.parser.HoodieDateTimeParser",
    "Date time parser class; only Hudi's default is supported.",
    ("hoodie.deltastreamer.keygen.datetime.parser.class",),
)

register(
    RECORDKEY_FIELD,
    PARTITIONPATH_FIELD,
    KEYGENERATOR_CLASS,
    KEYGENERATOR_TYPE,
    HIVE_STYLE,
    URL_ENCODE,
    CONSISTENT_LOGICAL_TIMESTAMP,
    COMPLEX_NEW_ENCODING,
    COMPLEX_TABLE_ENCODING,
    TS_TYPE,
    TS_SCALAR_UNIT,
    TS_INPUT_FORMAT,
    TS_INPUT_FORMAT_DELIMITER,
    TS_INPUT_TZ,
    TS_OUTPUT_FORMAT,
    TS_OUTPUT_TZ,
    TS_TZ,
    DATETIME_PARSER,
)
