"""The storage facade over pyarrow.fs."""
