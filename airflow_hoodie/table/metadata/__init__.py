"""Hudi's metadata documents: commit metadata, Avro plans and their codec."""
