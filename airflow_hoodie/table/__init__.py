"""The Apache Hudi table format, table version 6, in pure Python.

Imports neither Spark nor Airflow, so Spark executors, the Airflow triggerer and the CLI
can all use it.
"""
