"""File groups and slices: naming, the file-system view, base files, markers."""
