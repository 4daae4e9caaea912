"""The plan figures the docs quote are `tprepro plan`'s own: regenerated, they equal the pages' text."""

import json
import subprocess
import sys

import pytest

from helpers import REPO, tool_env
from tprepro.plan import quoted


@pytest.mark.parametrize("page", quoted.QUOTING)
def test_each_quoted_plan_figure_is_the_tools_own(page, monkeypatch):
    monkeypatch.chdir(REPO)
    text = (REPO / page).read_text(encoding="utf-8")
    names = [match.group("name") for match in quoted.QUOTE.finditer(text)]
    assert names, f"{page} quotes no plan figure"
    assert quoted.regenerated(text, page) == text, f"{page}: stale plan figures; run `make docs-plan`"


def test_the_quoted_table_holds_the_plans_totals(monkeypatch):
    """The configurations table against `tprepro plan --json` itself, not the generator's own reading."""
    monkeypatch.chdir(REPO)
    out = subprocess.run([sys.executable, "-m", "tprepro", "plan", "--params", quoted.PAPER, "--device", "h100",
                          "--gpus", "8", "--no-calibrate", "--json", "-"], cwd=REPO, env=tool_env(),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    totals = json.loads(out.stdout)["totals"]
    row = next(line for line in (REPO / "docs/plan.md").read_text().splitlines()
               if line.startswith(f"| `{quoted.PAPER} --device h100"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1:4] == [str(totals["jobs"]), str(totals["unmeasured"]), str(totals["extrapolated"])]
    assert cells[4] == f"{totals['priced_cpu_hours']:.2f} + {totals['cpu_unmeasured']} unmeasured"
    assert cells[5] == f"{totals['priced_gpu_hours']:.2f} + {totals['gpu_unmeasured']} unmeasured"


def test_an_unknown_quote_is_an_error_naming_the_page():
    with pytest.raises(KeyError, match="docs/x.md: unknown plan quote 'nope'"):
        quoted.regenerated("<!-- tprepro plan: nope -->\n<!-- end tprepro plan -->", "docs/x.md")
