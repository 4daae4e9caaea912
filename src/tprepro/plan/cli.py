"""`tprepro plan`'s options and output."""

from __future__ import annotations

import argparse
import json
import sys


def plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", help="the device kind GPU rule families are priced on, e.g. h100 "
                                         "(default: each family's cluster.<family>.device, else cpu)")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs running jobs at once (default 1)")
    parser.add_argument("--cores", type=int, help="CPU jobs at once (default: 2 on CPUs only, as `make run`; "
                                                  "100 with GPUs, the SLURM profile's job limit)")
    parser.add_argument("--jobs", action="store_true", help="a line per job instead of per rule")
    parser.add_argument("--json", metavar="FILE", help="also write the plan as JSON (- for standard output only)")
    parser.add_argument("--actual", action="store_true",
                        help="compare with what the runs recorded in MLflow: estimate vs actual per rule")


def run_plan(args) -> None:
    from tprepro.experiments import experiments
    from tprepro.io import atomic_write_text
    from tprepro.params import load_params
    from tprepro.plan.plan import make_plan
    from tprepro.plan.report import as_json, table

    experiments()
    params = load_params(args.params)
    plan = make_plan(params, args.params, args.device, args.gpus, args.cores)
    if args.json == "-":
        json.dump(as_json(plan), sys.stdout, indent=1)
        print()
        return
    if args.json:
        from pathlib import Path

        atomic_write_text(Path(args.json), json.dumps(as_json(plan), indent=1) + "\n")
    if args.actual:
        from tprepro.plan.actual import compare, recorded

        print(compare(plan, recorded(params)))
    else:
        print(table(plan, per_job=args.jobs))
