"""airflow-hoodie: Apache Hudi timeline actions as Apache Airflow tasks.

The package is layered (see DESIGN.md): ``airflow_hoodie.table`` is the Hudi table
format in pure Python (table versions 6, 8 and 9: Hudi 0.14/0.15 and 1.x tables, each kept at
its own version), ``airflow_hoodie.actions`` plans and executes timeline actions,
``airflow_hoodie.spark`` holds everything that needs a SparkSession, and the hooks,
operators, sensors and triggers form the Airflow provider.
"""

from __future__ import annotations

__version__ = "0.1.0"


def get_provider_info() -> dict:
    """Entry point Airflow's ProvidersManager calls; kept import-light on purpose."""
    from airflow_hoodie.provider_info import provider_info

    return provider_info()


def __getattr__(name: str) -> object:
    """``airflow_hoodie.Expression`` (a read filter's expression-index function), imported on
    first use so that importing the provider stays light."""
    if name == "Expression":
        from airflow_hoodie.table.expression_index.expression import Expression

        return Expression
    raise AttributeError(f"module 'airflow_hoodie' has no attribute {name!r}")
