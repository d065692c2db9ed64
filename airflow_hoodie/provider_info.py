"""What Airflow's ProvidersManager learns about airflow-hoodie.

Kept free of Airflow imports: ``airflow providers list`` (and every Airflow process at
start-up) calls this through the ``apache_airflow_provider`` entry point, so it must be
cheap and must never fail because a heavier part of the package cannot be imported.
"""

from __future__ import annotations

from typing import Any

from airflow_hoodie import __version__

INTEGRATION = "Apache Hudi"
DEFAULT_SPARK_CONN_ID = "spark_default"

#: The extras a ``hoodie`` connection understands, in the declarative ``conn-fields``
#: format of Airflow >= 3.2 (also turned into WTForms widgets for older UIs).
CONNECTION_FIELDS: dict[str, dict[str, Any]] = {
    "base_path": {
        "label": "Table base path / URI",
        "description": "Default Hudi table location, e.g. /data/trips or s3://bucket/trips.",
        "schema": {"type": ["string", "null"]},
    },
    "spark_conn_id": {
        "label": "Spark connection id",
        "description": "Spark connection the jobs are submitted through (default spark_default; "
                       "local[*] when it does not exist).",
        "schema": {"type": ["string", "null"], "default": DEFAULT_SPARK_CONN_ID},
    },
    "storage_options": {
        "label": "Storage options (JSON)",
        "description": 'pyarrow filesystem options, e.g. {"region": "eu-west-1", "endpoint_override": "..."}.',
        "schema": {"type": ["string", "null"]},
    },
    "hoodie_conf": {
        "label": "Default hoodie.* configs (JSON)",
        "description": 'Settings every job gets, e.g. {"hoodie.table.type": "MERGE_ON_READ"}.',
        "schema": {"type": ["string", "null"]},
    },
    "spark_conf": {
        "label": "Spark conf (JSON)",
        "description": 'spark.* settings for every job, e.g. {"spark.executor.memory": "2g"}.',
        "schema": {"type": ["string", "null"]},
    },
    "python": {
        "label": "Python for Spark workers",
        "description": "Interpreter with pyarrow and fastavro on every Spark node (default: Airflow's).",
        "schema": {"type": ["string", "null"]},
    },
    "jobs_dir": {
        "label": "Job scripts directory",
        "description": "Directory holding the spark_jobs/*.py scripts (default: found next to the package).",
        "schema": {"type": ["string", "null"]},
    },
}

UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden_fields": ["host", "schema", "port"],
    "relabeling": {"login": "Storage access key", "password": "Storage secret key"},
    "placeholders": {
        "base_path": "/data/hudi/trips",
        "storage_options": '{"region": "us-east-1"}',
        "hoodie_conf": '{"hoodie.datasource.write.recordkey.field": "id"}',
        "spark_conf": '{"spark.executor.memory": "2g"}',
    },
}


HOOK_MODULES = ["airflow_hoodie.hooks.hoodie"]
OPERATOR_MODULES = ["airflow_hoodie.operators.hoodie"]
SENSOR_MODULES = ["airflow_hoodie.sensors.hoodie"]
#: the plugin (airflow_hoodie/plugins): table health API at /hoodie and its UI page
PLUGIN_NAME = "hoodie"
PLUGIN_CLASS = "airflow_hoodie.plugins.hoodie_plugin.HoodiePlugin"
#: the ``[hoodie]`` section of airflow.cfg (``airflow config list`` shows it)
CONFIG: dict[str, Any] = {
    "hoodie": {
        "description": "Apache Hudi (airflow-hoodie) settings of the api-server's table health plugin.",
        "options": {
            "table_roots": {
                "description": (
                    "Comma-separated URI prefixes whose Hudi tables the table health API and page may "
                    "open, besides the hudi+ Assets of DAGs: a table at a prefix or directly under it "
                    "is listed, anything outside every prefix is refused."
                ),
                "version_added": "0.1.0",
                "type": "string",
                "example": "s3://lake/tables/,/data/hudi",
                "default": "",
            },
        },
    },
}
TRIGGER_MODULES = ["airflow_hoodie.triggers.hoodie", "airflow_hoodie.triggers.write", "airflow_hoodie.triggers.maintenance"]

#: Asset URI schemes we register: ``hudi+<storage scheme>://...`` names a Hudi table by
#: its base path (``hudi+file:///data/trips``, ``hudi+s3://bucket/trips``); plain
#: ``hudi:///data/trips`` is accepted as the local-file shorthand.
ASSET_SCHEMES = [
    "hudi",
    "hudi+file",
    "hudi+s3",
    "hudi+s3a",
    "hudi+gs",
    "hudi+gcs",
    "hudi+hdfs",
    "hudi+abfs",
    "hudi+abfss",
]


def provider_info() -> dict[str, Any]:
    """The dictionary Airflow validates against ``provider_info.schema.json``."""
    return {
        "package-name": "airflow-hoodie",
        "name": "Apache Hudi (airflow-hoodie)",
        "description": (
            "Every action on an Apache Hudi table's timeline (upsert, compaction, clustering, "
            "clean, archive, rollback, savepoint, indexing) as an Airflow task, run as spark-submit jobs "
            "on a pure-Python implementation of the Hudi table format; sensors and deferrable "
            "triggers that wait on timeline instants; Asset events for table updates."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://hudi.apache.org/",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": HOOK_MODULES}],
        "operators": [{"integration-name": INTEGRATION, "python-modules": OPERATOR_MODULES}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": SENSOR_MODULES}],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": TRIGGER_MODULES}],
        "connection-types": [
            {
                "connection-type": "hoodie",
                "hook-class-name": "airflow_hoodie.hooks.hoodie.HoodieHook",
                "hook-name": "Apache Hudi (airflow-hoodie)",
                "conn-fields": CONNECTION_FIELDS,
                "ui-field-behaviour": {
                    "hidden-fields": UI_FIELD_BEHAVIOUR["hidden_fields"],
                    "relabeling": UI_FIELD_BEHAVIOUR["relabeling"],
                    "placeholders": UI_FIELD_BEHAVIOUR["placeholders"],
                },
            }
        ],
        "extra-links": ["airflow_hoodie.links.SparkUILink", "airflow_hoodie.links.HoodieTableHealthLink"],
        "plugins": [{"name": PLUGIN_NAME, "plugin-class": PLUGIN_CLASS}],
        "config": CONFIG,
        "asset-uris": [
            {
                "schemes": ASSET_SCHEMES,
                "handler": "airflow_hoodie.assets.sanitize_uri",
                "factory": "airflow_hoodie.assets.create_asset",
                "to_openlineage_converter": "airflow_hoodie.lineage.convert_asset_to_openlineage",
            }
        ],
    }
