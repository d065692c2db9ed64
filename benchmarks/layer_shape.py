"""Layer figures of a checkout of ``airflow_hoodie/`` (not a test): modules and lines per
top-level package, imports that break DESIGN.md's layers, and import cycles (lazy imports
included, ``TYPE_CHECKING`` blocks excluded). ``tests/test_layers.py`` enforces the rules;
this prints the numbers, for a before/after comparison of two checkouts.

    python benchmarks/layer_shape.py <checkout dir>
"""
import ast, sys, pathlib, collections, json
root = pathlib.Path(sys.argv[1]) / "airflow_hoodie"
mods = {}
for p in root.rglob("*.py"):
    rel = p.relative_to(root.parent).with_suffix("").parts
    name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
    mods[name] = p
def imports(p, name):
    tree = ast.parse(p.read_text()); tc = set(); out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ((isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING") or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for n in ast.walk(node): tc.add(id(n))
    for node in ast.walk(tree):
        if id(node) in tc: continue
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if p.name != "__init__.py": base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                m = ".".join(base + ([node.module] if node.module else []))
            else: m = node.module
            out.append(m); out += [m + "." + a.name for a in node.names if m + "." + a.name in mods]
    res = []
    for m in out:
        if not m or not m.startswith("airflow_hoodie"): continue
        while m not in mods and "." in m: m = m.rsplit(".", 1)[0]
        res.append(m)
    return res
def pkg(m):
    parts = m.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (root / parts[1]).is_dir()) else "<root>"
edges = {n: set(imports(p, n)) for n, p in mods.items()}
sizes = collections.Counter(); count = collections.Counter()
for n, p in mods.items():
    sizes[pkg(n)] += len(p.read_text().splitlines()); count[pkg(n)] += 1
rule = {"table": {"actions", "spark", "hooks", "operators", "sensors", "triggers", "health", "plugins"},
        "actions": {"spark", "hooks", "operators", "sensors", "triggers", "plugins"},
        "hooks": {"triggers", "operators", "sensors"}}
viol = sorted({f"{a} -> {b}" for a, bs in edges.items() for b in bs if pkg(b) in rule.get(pkg(a), ())})
sys.setrecursionlimit(100000)
index = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
def sc(v):
    index[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(comp)
for v in list(mods):
    if v not in index: sc(v)
cross = [sorted(c) for c in sccs if len({pkg(x) for x in c}) > 1]
print(json.dumps({"packages": {k: {"modules": count[k], "lines": sizes[k]} for k in sorted(sizes)},
                  "violations": viol, "cross_package_cycles": [{"modules": len(c), "packages": sorted({pkg(x) for x in c})} for c in cross],
                  "largest_cycle": max((len(c) for c in sccs), default=0)}, indent=1))
