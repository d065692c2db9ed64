"""Hudi's metadata table (``.hoodie/metadata``): what we do with it when we change a table."""
