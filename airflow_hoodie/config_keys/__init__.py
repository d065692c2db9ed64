"""The catalog of every ``hoodie.*`` key airflow-hoodie reads: names, Hudi's defaults and
aliases, one small module per area.

A leaf on purpose: these modules import only :mod:`airflow_hoodie.config`, never the code
that uses the keys. The first config lookup loads the whole catalog (a typo check needs
every key), and that must not pull boto3 or kazoo into a Spark executor writing a base
file, nor pyspark into Airflow's triggerer.
"""
