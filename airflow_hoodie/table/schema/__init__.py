"""Schemas: Arrow <-> Avro conversion and the meta fields."""
