"""Code-shape figures of ``airflow_hoodie/`` at a git revision (not a test).

    python benchmarks/code_shape.py [REV]

Modules and lines, modules over 600 lines, functions over 80 lines, imports inside
functions and ``table: Any`` parameters: the measures issue 8 set for the package.
"""

from __future__ import annotations

import ast
import subprocess
import sys


def shape(rev: str) -> dict[str, object]:
    listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "airflow_hoodie"],
                             capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in listing if f.endswith(".py")]
    lines = 0
    sizes: dict[str, int] = {}
    long_functions: list[tuple[str, str, int]] = []
    nested_imports = untyped_tables = 0
    for path in files:
        src = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout
        sizes[path] = len(src.splitlines())
        lines += sizes[path]
        untyped_tables += src.count("table: Any")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > 80:
                    long_functions.append((path, node.name, node.end_lineno - node.lineno + 1))
                nested_imports += sum(isinstance(m, (ast.Import, ast.ImportFrom)) for m in ast.walk(node))
    return {"rev": rev, "modules": len(files), "lines": lines, "largest": max(sizes.values()),
            "over_600": sorted((p, n) for p, n in sizes.items() if n > 600),
            "functions_over_80": long_functions, "imports_in_functions": nested_imports,
            "table_any": untyped_tables}


if __name__ == "__main__":
    print(shape(sys.argv[1] if len(sys.argv) > 1 else "HEAD"))
