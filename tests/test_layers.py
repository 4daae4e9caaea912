"""Layers point one way: the core (params, data, models, train, evaluate, interpret, report and the
shared modules below them) imports nothing from `tprepro.experiments`; experiments register what the
core needs (settings rules, codecs). Only the entry points (cli, predict, workflow, plan) list them."""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tprepro"
CORE = ("params", "data", "models", "train", "evaluate", "interpret", "report",
        "io.py", "errors.py", "children.py", "invocation.py", "figures.py", "pipeline.py", "training.py", "tracking",
        "work.py")
ENTRY_POINTS = {"cli.py", "predict.py", "workflow.py", "dvc_yaml.py", "dvc_commit.py", "__main__.py", "__init__.py",
                "plan",  # `tprepro plan`: the jobs of every experiment's stages
                "job_graph.py",  # every experiment's stages expanded into jobs, for workflow.py and the plan
                "output_times.py",  # workflow.py's: outputs' times follow their content
                "audit.py",  # cli.py's: what a command runs and reads, for the tests of the declarations
                "compare.py"}  # `tprepro compare`: DVC's experiments side by side


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in `path`, at any depth (function-level imports count too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
    return found


def core_files() -> list[Path]:
    files = []
    for entry in CORE:
        path = SRC / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def test_every_top_level_module_is_core_an_experiment_or_an_entry_point():
    names = {p.name for p in SRC.iterdir() if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())}
    assert names <= set(CORE) | ENTRY_POINTS | {"experiments"}, names - set(CORE) - ENTRY_POINTS


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_the_core_imports_no_experiment(path):
    upward = [f"{path.relative_to(SRC.parent.parent)}:{line}: {module}"
              for line, module in imported_modules(path) if module.startswith("tprepro.experiments")]
    assert not upward, "the core imports an experiment:\n" + "\n".join(upward)


@pytest.mark.parametrize("path", sorted((SRC / "tracking").glob("*.py")), ids=lambda p: p.name)
def test_tracking_knows_the_trainer_only_in_its_callback(path):
    """Lightning's shape: the store, parent runs, provenance and runs import nothing from train/;
    only the callback, the trainer's adapter, does."""
    trainer = [module for _, module in imported_modules(path) if module.startswith("tprepro.train")]
    assert not trainer or path.name == "callback.py", trainer


# Test folders that hold no package's tests: the pipeline files (Snakefile, dvc.yaml, profiles,
# docs), the benchmarks and the local SLURM.
NOT_PACKAGES = {"workflow", "benchmarks", "slurm"}


def test_the_tests_mirror_the_packages():
    """tests/<path>/ holds the tests of src/tprepro/<path>/ (e.g. tests/experiments/n2f/algolisp/);
    a module's tests sit in its package's folder, tests of top-level modules at tests/."""
    tests = SRC.parents[1] / "tests"
    folders = {path.relative_to(tests) for path in tests.rglob("*") if path.is_dir() and path.name != "__pycache__"}
    strays = {str(folder) for folder in folders
              if folder.parts[0] not in NOT_PACKAGES and not (SRC / folder / "__init__.py").is_file()}
    assert not strays, f"test folders without a package under src/tprepro/: {sorted(strays)}"
    assert not {p.name for p in tests.glob("test_*.py")} & {p.name for p in tests.rglob("*/test_*.py")}


@pytest.mark.parametrize("path", sorted((SRC / "plan").glob("*.py")), ids=lambda p: p.name)
def test_the_plan_sits_above_the_workflow_helpers(path):
    """workflow.py asks the plan for SLURM runtimes and CPUs; the plan imports nothing of workflow.py
    (the references both read are in params/references.py): no import circle."""
    back = [module for _, module in imported_modules(path) if module == "tprepro.workflow"]
    assert not back, f"{path.name} imports tprepro.workflow"


def test_the_job_graph_sits_below_the_plan_and_the_workflow_helpers():
    """workflow.py and the plan both read the one expansion of the stages into jobs; it reads neither."""
    back = [module for _, module in imported_modules(SRC / "job_graph.py")
            if module == "tprepro.workflow" or module.startswith("tprepro.plan")]
    assert not back, back


@pytest.mark.parametrize("path", sorted((SRC / "experiments").rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_the_registry_and_the_experiments_import_no_entry_point(path):
    """A stage declares its work with the core's builders (tprepro.work); the plan and the workflow
    helpers read the registry, never the other way: no circle among plan, workflow and the registry."""
    upward = [module for _, module in imported_modules(path)
              if module.split(".")[:2] in (["tprepro", "plan"], ["tprepro", "workflow"], ["tprepro", "cli"])]
    assert not upward, f"{path.relative_to(SRC)} imports {upward}"


@pytest.mark.parametrize("path", sorted((SRC / "evaluate").glob("*.py")), ids=lambda p: p.name)
def test_evaluation_sits_below_the_pipeline(path):
    """pipeline.py runs the evaluations; the evaluation modules import nothing of it (train/files.py names
    the model file both use)."""
    assert "tprepro.pipeline" not in [module for _, module in imported_modules(path)]


def _unit(module: str) -> str | None:
    """The top-level package or module of src/tprepro a `tprepro.…` import names."""
    parts = module.split(".")
    return parts[1] if parts[0] == "tprepro" and len(parts) > 1 else None


def test_no_circle_among_the_top_level_packages_and_modules():
    """Imports at any depth, function-level included: no package reaches back to one that reaches it."""
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        unit = path.relative_to(SRC).parts[0].removesuffix(".py")
        graph.setdefault(unit, set()).update(
            other for _, module in imported_modules(path) if (other := _unit(module)) not in (None, unit))

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for other in graph.get(todo.pop(), ()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return seen

    circles = sorted({tuple(sorted((unit, other))) for unit in graph for other in graph[unit]
                      if unit in reaches(other)})
    assert not circles, f"import circles (each pair reaches the other): {circles}"


def _module_of(path: Path) -> str:
    """`tprepro.data.batching` for src/tprepro/data/batching.py, `tprepro.params` for its __init__.py."""
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, set[str]]:
    """Every module of src/tprepro (packages' __init__.py included) -> the modules it imports, at any depth
    (function-level and annotation-only imports too): `from tprepro.data import batching` names the module."""
    modules = {_module_of(path): path for path in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                                else node.module for alias in node.names)
        graph[module] = {other for other in imported if other in modules and other != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted: every import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_circles_finds_a_circle_and_nothing_else():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_circle_among_the_modules():
    """Modules inside packages are nodes too: no module reaches back to one that imports it."""
    found = circles(module_graph())
    assert not found, "import circles among modules:\n" + "\n".join(" <-> ".join(group) for group in found)


def layers_table() -> dict[str, set[str]]:
    """ARCHITECTURE.md's layers table: layer -> the files and packages its modules column names (`plan/` as plan)."""
    text = (SRC.parents[1] / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layers: who may import whom", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("layer", "---"):
            names = re.findall(r"`([A-Za-z0-9_<>/.]+)`", cells[1])
            table[cells[0]] = {name.removesuffix("/") for name in names if name.endswith((".py", "/"))}
    return table


def test_the_architecture_layers_table_names_the_layers_of_this_test():
    table = layers_table()
    assert table.keys() == {"entry points", "experiments", "core"}, table.keys()
    assert table["core"] == set(CORE), "core layer"
    assert table["entry points"] == ENTRY_POINTS, "entry points layer"
    assert table["experiments"] == {"experiments/<name>", "experiments/__init__.py"}
