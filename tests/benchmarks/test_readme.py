"""benchmarks/README.md sorts every script: the plan's measurements are exactly the scripts that write through
tprepro.plan.speeds's writers, the rest are studies; the kit's docstring names each of its modules."""

import ast
import re

from helpers import REPO

BENCHMARKS = REPO / "benchmarks"


def table(section: str) -> set[str]:
    """The scripts the first column of a README section's table names."""
    text = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in body.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([\w.]+)`", row)}


def writes_measurements(path) -> bool:
    """Whether `path` imports one of tprepro.plan.speeds's writers (write_*, update_*), at any depth."""
    return any(isinstance(node, ast.ImportFrom) and node.module == "tprepro.plan.speeds"
               and any(alias.name.startswith(("write_", "update_")) for alias in node.names)
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_every_script_is_a_measurement_or_a_study():
    measurements, studies = table("The plan's measurements"), table("Studies")
    scripts = {path.name for path in BENCHMARKS.iterdir() if path.suffix in (".py", ".sh")} - {
        "__init__.py", "timed_tprepro.sh"}  # the timing wrapper, named under the kit
    assert measurements and studies and not measurements & studies
    assert measurements | studies == scripts


def test_the_measurements_are_the_scripts_that_write_what_the_plan_reads():
    writers = {path.name for path in BENCHMARKS.glob("*.py") if writes_measurements(path)}
    assert table("The plan's measurements") == writers


def test_the_kit_lists_its_modules():
    doc = ast.get_docstring(ast.parse((BENCHMARKS / "kit" / "__init__.py").read_text(encoding="utf-8")))
    listed = set(re.findall(r"^- `(\w+)`", doc, re.MULTILINE))
    assert listed == {path.stem for path in (BENCHMARKS / "kit").glob("*.py")} - {"__init__"}
