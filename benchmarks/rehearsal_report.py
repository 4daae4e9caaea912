"""What a rehearsal run measured, beside what `tprepro plan` says of the paper configuration (docs/rehearsal.md).

Run the rehearsal with the timing wrapper (benchmarks/timed_tprepro.sh; docs/plan.md says how), fit the data
rates (benchmarks/data_rates.py), then:

    python -m benchmarks.rehearsal_report --times /tmp/rehearsal-jobs.jsonl --wall-s 5400 \\
        --json results/benchmarks/rehearsal-cpu.json

Prints per rule the jobs that ran, failed, their CPU seconds and the longest job's; then per Mathematics
module family (the prefix of the module name) the paper configuration's data CPU-hours as the plan prices
them, and its longest data job; then, for data jobs timed at a size the fits did not use (`--check`), the
fit's prediction against the measurement. Writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from tprepro.experiments import experiments
from tprepro.params import load_params
from tprepro.plan.plan import make_plan
from tprepro.plan.speeds import load_measurements


def rule_rows(times: Path) -> dict[str, dict]:
    """Per rule (the sub-command): jobs, failures, CPU seconds, the longest job's wall seconds."""
    rows: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "failed": 0, "cpu_s": 0.0, "longest_wall_s": 0.0})
    for line in times.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        row = rows[record["argv"][0]]
        row["jobs"] += 1
        row["failed"] += record["status"] != 0
        row["cpu_s"] += record["cpu_s"]
        row["longest_wall_s"] = max(row["longest_wall_s"], record["wall_s"])
    return dict(rows)


def data_families(paper: dict) -> dict:
    """Per module family, the paper's data jobs and CPU-hours as the plan prices them; its longest data job."""
    plan = make_plan(paper, measurements=load_measurements())
    families: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "cpu_h": 0.0, "unpriced": 0, "longest_cpu_h": 0.0})
    for planned in (p for p in plan.jobs if p.job.rule == "data"):
        family = families[planned.work.module_family]
        family["jobs"] += 1
        if planned.estimate.seconds is None:
            family["unpriced"] += 1
            continue
        family["cpu_h"] += planned.estimate.seconds / 3600
        family["longest_cpu_h"] = max(family["longest_cpu_h"], planned.estimate.seconds / 3600)
    longest = max((p for p in plan.jobs if p.work.kind == "generate" and p.wall_s is not None), key=lambda p: p.wall_s)
    return {"families": dict(families), "longest_data_job": {"job": longest.job.name, "cpus": longest.cpus,
                                                             "wall_s": longest.wall_s, "cpu_s": longest.estimate.seconds}}


def out_of_sample(params_path: str, times: Path) -> list[dict]:
    """Data jobs timed at a size the fits did not use: the fit's prediction against the measurement."""
    from tprepro.experiments.mathematics.modules import TRAIN_SPLITS

    data = load_params(params_path, models=False)["data"]
    fits = load_measurements().data_rates["cpu"].jobs
    rows = []
    for line in times.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        argv = record["argv"]
        split, module = argv[argv.index("--split") + 1], argv[argv.index("--module") + 1]
        fit = fits.get(f"{split}/{module}")
        if argv[0] != "data" or record["status"] != 0 or fit is None:
            continue
        problems = data["train_per_module" if split in TRAIN_SPLITS else "test_per_module"]
        rows.append({"job": f"{split}/{module}", "problems": problems, "measured_s": record["cpu_s"],
                     "predicted_s": fit.seconds(problems)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--times", type=Path, required=True, help="the rehearsal's timing records")
    parser.add_argument("--check", action="append", default=[], metavar="PARAMS=TIMES",
                        help="data jobs timed at a size the fits did not use (benchmarks/data_rates.py --measure)")
    parser.add_argument("--paper", default="workflow/configs/paper.yaml")
    parser.add_argument("--wall-s", type=float, help="the run's wall seconds (snakemake start to end)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    experiments()
    rules = rule_rows(args.times)
    print(f"{'rule':<26} {'jobs':>5} {'failed':>6} {'CPU min':>9} {'longest job s':>14}")
    for rule, row in sorted(rules.items(), key=lambda item: -item[1]["cpu_s"]):
        print(f"{rule:<26} {row['jobs']:>5} {row['failed']:>6} {row['cpu_s'] / 60:>9.1f} {row['longest_wall_s']:>14.1f}")
    total_cpu = sum(row["cpu_s"] for row in rules.values())
    print(f"{'all':<26} {sum(r['jobs'] for r in rules.values()):>5} {sum(r['failed'] for r in rules.values()):>6} "
          f"{total_cpu / 60:>9.1f}" + (f"   wall {args.wall_s / 60:.1f} min" if args.wall_s else ""))
    data = data_families(load_params(args.paper))
    print(f"\npaper data jobs as planned\n{'module family':<14} {'jobs':>5} {'CPU-h':>8} {'longest job CPU-h':>18}")
    for family, row in sorted(data["families"].items()):
        print(f"{family:<14} {row['jobs']:>5} {row['cpu_h']:>8.1f} {row['longest_cpu_h']:>18.2f}"
              + (f"  ({row['unpriced']} unpriced)" if row["unpriced"] else ""))
    print(f"{'all':<14} {sum(r['jobs'] for r in data['families'].values()):>5} "
          f"{sum(r['cpu_h'] for r in data['families'].values()):>8.1f}")
    longest = data["longest_data_job"]
    print(f"longest paper data job: {longest['job']}, {longest['cpu_s'] / 3600:.1f} CPU-h on {longest['cpus']} CPUs: "
          f"{longest['wall_s'] / 60:.0f} min")
    checks = []
    for check in args.check:
        params_path, times = check.split("=", 1)
        checks += out_of_sample(params_path, Path(times))
    if checks:
        print(f"\nfits against data jobs at a size they did not use\n{'job':<58} {'problems':>8} {'measured s':>11} "
              f"{'fit s':>8} {'fit/measured':>13}")
        for row in checks:
            print(f"{row['job']:<58} {row['problems']:>8} {row['measured_s']:>11.1f} {row['predicted_s']:>8.1f} "
                  f"{row['predicted_s'] / row['measured_s']:>13.2f}")
        ratios = [row["predicted_s"] / row["measured_s"] for row in checks]
        print(f"fit/measured over {len(checks)} jobs: median {statistics.median(ratios):.2f}, "
              f"range {min(ratios):.2f}-{max(ratios):.2f}")
    data["out_of_sample"] = checks
    if args.json:
        args.json.write_text(json.dumps({"rules": rules, "wall_s": args.wall_s, "cpu_s": total_cpu, **data},
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
