"""The plan figures the docs quote, generated from `tprepro plan` itself, so that they cannot go stale.

A page holds each quote between markers naming what it is:

    <!-- tprepro plan: configurations -->
    ...generated; do not edit by hand...
    <!-- end tprepro plan -->

`python -m tprepro.plan.quoted` (`make docs-plan`) rewrites every quote of QUOTING from the committed
measurements, at the measured machine's speed (no calibration); `--check` exits 1 naming each stale one
(tests/plan/test_quoted.py runs it)."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

from tprepro.plan.plan import CPU, Plan, make_plan
from tprepro.plan.report import duration, size, totals_lines

QUOTING = ("docs/plan.md", "docs/rehearsal.md")  # the pages with quotes
PAPER = "workflow/configs/paper.yaml"
CONFIGURATIONS = (("params.yaml", None, 1), ("workflow/configs/cpu.yaml", None, 1),
                  ("workflow/configs/claims.yaml", None, 1), (PAPER, "h100", 8))  # (params, --device, --gpus)
QUOTE = re.compile(r"(<!-- tprepro plan: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end tprepro plan -->)", re.S)


@cache
def plan_of(params_path: str, device: str | None = None, gpus: int = 1) -> Plan:
    from tprepro.experiments import experiments
    from tprepro.params import load_params

    experiments()
    return make_plan(load_params(params_path), params_path, device, gpus)


def _hours(total: float | None, unmeasured: int, priced: float) -> str:
    return f"{total:.2f}" if total is not None else f"{priced:.2f} + {unmeasured} unmeasured"


def configurations() -> str:
    """A row per shipped configuration: its jobs, totals and wall time."""
    rows = ["| configuration | jobs | unmeasured | extrapolated | CPU-hours | GPU-hours | disk | wall time (slots) "
            "| critical path |", "|---|---|---|---|---|---|---|---|---|"]
    for params, device, gpus in CONFIGURATIONS:
        plan = plan_of(params, device, gpus)
        t = plan.totals()
        name = f"`{params}" + (f" --device {device} --gpus {gpus}`" if device else "`")
        slots = f"{plan.gpus} GPUs, {plan.cores} CPU jobs" if device else f"{plan.cores} cores"
        known = t["wall_s"] is not None
        priced = "" if known else "priced jobs: "
        disk = size(t["disk_bytes"]) + (f" + {t['disk_unknown']} unknown" if t["disk_unknown"] else "")
        wall = duration(t["wall_s"] if known else t["priced_wall_s"])
        path = duration(t["critical_path_s"] if known else t["priced_critical_path_s"])
        rows.append(f"| {name} | {t['jobs']} | {t['unmeasured']} | {t['extrapolated']} | "
                    f"{_hours(t['cpu_hours'], t['cpu_unmeasured'], t['priced_cpu_hours'])} | "
                    f"{_hours(t['gpu_hours'], t['gpu_unmeasured'], t['priced_gpu_hours'])} | {disk} | "
                    f"{priced}{wall} ({slots}) | {priced}{path} |")
    machines = plan_of(*CONFIGURATIONS[0]).cpu_machines
    rows += ["", "CPU rates measured on " + "; ".join(f"{machine}: {', '.join(files)}"
                                                      for machine, files in machines.items()) + "."]
    return "\n".join(rows)


def _data_jobs(plan: Plan) -> list:
    return [p for p in plan.jobs if p.job.stage == "data"]


def paper_data() -> str:
    """paper.yaml's Mathematics data jobs and vocabulary: CPU-hours, the costliest, CPUs, runtimes."""
    plan = plan_of(*CONFIGURATIONS[-1])
    data = _data_jobs(plan)
    costliest = max(data, key=lambda p: p.estimate.seconds)
    longest = max(data, key=lambda p: p.wall_s)
    vocab = next(p for p in plan.jobs if p.job.stage == "vocab")
    unpriced = [p for p in plan.jobs if p.device == CPU and p.estimate.seconds is None]
    cpus = sorted({p.cpus for p in data})
    runtimes = sorted({p.runtime for p in data})
    return "\n".join([
        f"- {len(data)} Mathematics data jobs, {sum(p.estimate.seconds for p in data) / 3600:.1f} CPU-hours, "
        f"{sum(p.estimate.disk_bytes or 0 for p in data) / 1e9:.1f} GB, each from its own fit; the costliest "
        f"{costliest.estimate.seconds / 3600:.1f} CPU-hours (`{costliest.work.split}/{costliest.work.module}`). "
        f"Each gets the CPUs that finish it in about an hour ({cpus[0]} to {cpus[-1]}; the longest "
        f"{duration(longest.wall_s)} from start to end, `{longest.work.split}/{longest.work.module}`) and a SLURM "
        f"runtime of {runtimes[0]} to {runtimes[-1]} minutes.",
        f"- `vocab` reads {vocab.work.items:,} problems in {duration(vocab.estimate.seconds)} (SLURM runtime "
        f"{vocab.runtime} min).",
        f"- {len(unpriced)} CPU jobs are sized by release files (" +
        ", ".join(sorted({p.job.rule for p in unpriced})) + "): unpriced, they request their family's "
        f"`time_limit` ({', '.join(sorted({str(p.runtime) for p in unpriced}))} min)."])


def paper_families() -> str:
    """paper.yaml's data CPU-hours by module family."""
    families: dict[str, list] = defaultdict(list)
    for p in _data_jobs(plan_of(*CONFIGURATIONS[-1])):
        families[p.work.module_family].append(p)
    rows = ["| family | jobs | CPU-h | costliest job CPU-h | disk |", "|---|---|---|---|---|"]
    for name, found in sorted(families.items()):
        rows.append(f"| {name} | {len(found)} | {sum(p.estimate.seconds for p in found) / 3600:.1f} | "
                    f"{max(p.estimate.seconds for p in found) / 3600:.2f} | "
                    f"{size(sum(p.estimate.disk_bytes or 0 for p in found))} |")
    every = [p for found in families.values() for p in found]
    rows.append(f"| all | {len(every)} | {sum(p.estimate.seconds for p in every) / 3600:.1f} | | "
                f"{size(sum(p.estimate.disk_bytes or 0 for p in every))} |")
    return "\n".join(rows)


def paper_headline() -> str:
    """The totals lines of `tprepro plan --params paper.yaml --device h100 --gpus 8`, as it prints them."""
    return "```\n" + "\n".join(totals_lines(plan_of(*CONFIGURATIONS[-1]))) + "\n```"


QUOTES = {"configurations": configurations, "paper-data": paper_data, "paper-families": paper_families,
          "paper-headline": paper_headline}


def regenerated(text: str, where: str) -> str:
    """`text` with each quote regenerated; an unknown quote name is an error naming the page."""
    def body(match: re.Match) -> str:
        name = match.group("name")
        if name not in QUOTES:
            raise KeyError(f"{where}: unknown plan quote {name!r} (known: {', '.join(QUOTES)})")
        return f"{match.group(1)}{QUOTES[name]()}\n{match.group(4)}"

    return QUOTE.sub(body, text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for page in QUOTING:
        path = Path(page)
        text = path.read_text(encoding="utf-8")
        new = regenerated(text, page)
        if new != text:
            stale.append(page)
            if not check:
                path.write_text(new, encoding="utf-8")
    if check and stale:
        print(f"stale plan quotes in {', '.join(stale)}: run `make docs-plan`", file=sys.stderr)
        return 1
    print("rewrote " + ", ".join(stale) if stale else "plan quotes up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
