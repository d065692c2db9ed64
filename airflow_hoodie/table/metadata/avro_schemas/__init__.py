"""Hudi's Avro schemas (.avsc), shipped as package data; a package so setuptools builds it as one."""
