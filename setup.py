"""Package layout that pyproject.toml cannot express: ``spark_jobs/`` stays at the top of
the repository (the design card's layout) and is installed as ``airflow_hoodie.spark_jobs``,
so ``spark-submit`` gets a real file inside site-packages after ``pip install``."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["airflow_hoodie", "airflow_hoodie.*"]) + ["airflow_hoodie.spark_jobs"],
    package_dir={"airflow_hoodie.spark_jobs": "spark_jobs"},
)
