"""The structure the README's Layout section promises, read from the code itself (ast, nothing imported):
layers import only downwards, no import cycles, only cli.py prints, only roofline.py combines the compute,
memory and communication terms into a time, modules and functions stay small."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "llm_roofline"

# Each top-level module or sub-package of llm_roofline and its layer: a module may import only from lower
# layers (and from its own sub-package). A new module must be given a layer here.
LAYERS = {
    "errors": 0, "version": 0,
    "units": 1, "bounds": 1, "engine": 1, "queueing": 2, "files": 2,
    "hardware": 3, "model": 3,
    "collectives": 4, "ops": 4,
    "roofline": 5, "attention_shapes": 6, "dequant": 6, "expert_kernels": 6, "gemm_tiles": 6,
    "sharding": 7, "efficiency": 7, "chip_fits": 8,
    "graph": 8, "uncertainty": 8,
    "memory": 9, "optable": 9, "phases": 9,
    "estimate": 10, "headlines": 11,
    "serve": 12, "sweep": 12,
    "plan": 13, "disaggregate": 13, "plan_serving": 13,
    "calibrate": 14,
    "report": 15,
    "commands": 16, "cli": 17, "__init__": 18, "__main__": 18,
}


def _modules() -> dict[str, Path]:
    """'llm_roofline.report.plot' -> path, for every module of the package."""
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Package modules `name` imports anywhere in its body (inside functions too: a lazy import is still an
    arrow), resolved to module names."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                stem = base[:len(base) - node.level + 1] + (node.module.split(".") if node.module else [])
            else:
                stem = node.module.split(".")
            if stem[0] != "llm_roofline":
                continue
            target = ".".join(stem)
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)  # `from . import sharding`
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("llm_roofline"))
    return found


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: {t for t in _imports(m, p) if t in mods and t != m} for m, p in mods.items()}


def test_every_module_has_a_layer():
    missing = sorted({_component(m) for m in _modules()} - set(LAYERS))
    assert not missing, f"give these modules a layer in LAYERS: {missing}"


def test_imports_only_go_down():
    upward = []
    for mod, targets in _graph().items():
        for t in targets:
            a, b = _component(mod), _component(t)
            if a != b and LAYERS[b] >= LAYERS[a] and a != "__init__":
                upward.append(f"{mod} -> {t}")
    assert not upward, "imports that do not go down a layer: " + ", ".join(sorted(upward))


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def _calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            yield node


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def test_only_the_cli_prints():
    offenders = []
    for name, path in _modules().items():
        if name == "llm_roofline.cli":  # commands.py returns text; cli.main prints it
            continue
        for call in _calls(path):
            f = _dotted(call.func)
            if f == "print" or f.startswith(("sys.stdout", "sys.stderr")):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{call.lineno} {f}")
    assert not offenders, "only cli.py prints: " + ", ".join(offenders)


def _names_in(node) -> set[str]:
    return {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node)
            if isinstance(n, (ast.Attribute, ast.Name))}


def test_only_roofline_combines_terms_into_a_time():
    # max(compute, memory) or compute + memory + comm anywhere else would be a second roofline
    offenders = []
    for name, path in _modules().items():
        if name == "llm_roofline.roofline":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] in ("max", "maximum"):
                used = _names_in(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                used = _names_in(node)
            else:
                continue
            if {"t_compute_s", "t_memory_s"} <= used:
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, "terms combined outside roofline.py: " + ", ".join(sorted(set(offenders)))


def test_modules_and_functions_stay_small():
    too_long = []
    for name, path in _modules().items():
        src = path.read_text()
        if src.count("\n") > 650:
            too_long.append(f"{name}: {src.count(chr(10))} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "_build_parser":
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    too_long.append(f"{name}.{node.name}: {lines} lines")
    assert not too_long, "split these: " + ", ".join(too_long)


@pytest.mark.parametrize("bad, expected", [
    ("from ..report.table import render\n", "llm_roofline.report.table"),
    ("from .estimate import evaluate\n", "llm_roofline.estimate"),
])
def test_the_import_reader_sees_lazy_and_relative_imports(tmp_path, bad, expected):
    # the checks above are only as good as this reader: a function-level relative import must be seen
    p = tmp_path / "x.py"
    p.write_text("def f():\n    " + bad)
    assert expected in _imports("llm_roofline.calibrate.x" if bad.startswith("from ..") else "llm_roofline.memory", p)


def test_every_subpackage_is_installed():
    # pyproject lists packages explicitly: a sub-package missing there imports here but not from a wheel
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    assert present - listed == set(), f"add to pyproject.toml [tool.setuptools] packages: {sorted(present - listed)}"


def test_import_is_light_and_public_functions_stay_functions():
    # `import llm_roofline` (issue 17: <= 0.15 s) loads the chip types, the errors and numpy only; estimate, sweep,
    # plan and serve resolve on first use, and stay the functions after their namesake submodules are imported
    import subprocess
    import sys

    code = ("import sys, types, llm_roofline as lr; "
            "heavy = [m for m in ('llm_roofline.estimate', 'llm_roofline.graph', 'llm_roofline.model.hf', "
            "'llm_roofline.plan', 'llm_roofline.serve', 'pandas', 'tomllib') if m in sys.modules]; "
            "assert not heavy, heavy; "
            "import llm_roofline.estimate, llm_roofline.plan, llm_roofline.serve, llm_roofline.plan.search; "
            "assert all(isinstance(getattr(lr, f), types.FunctionType) for f in ('estimate', 'sweep', 'plan', 'serve')); "
            "from llm_roofline import estimate; assert estimate is lr.estimate is sys.modules['llm_roofline.estimate'].estimate")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
