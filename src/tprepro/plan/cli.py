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
    calibration = parser.add_mutually_exclusive_group()
    calibration.add_argument("--calibrate", action="store_true",
                             help="measure this machine's CPU speed against the measured one (a reference run of "
                                  "real data jobs and a vocabulary slice, under a minute) and scale every CPU rate "
                                  "by it; the default when the measured machine is known and this one differs")
    calibration.add_argument("--no-calibrate", action="store_true",
                             help="price CPU jobs at the measured machine's speed, whatever this one is")
    parser.add_argument("--calibration-rounds", type=int, default=1, metavar="N",
                        help="run the calibration's reference N times, the factor the median over all their jobs "
                             "(default 1; a shared machine's speed varies from minute to minute)")


def run_plan(args) -> None:
    from tprepro.experiments import experiments
    from tprepro.io import atomic_write_text
    from tprepro.params import load_params
    from tprepro.plan.plan import make_plan
    from tprepro.plan.report import as_json, table
    from tprepro.plan.speeds import BENCHMARKS, load_measurements

    experiments()
    params = load_params(args.params)
    measurements = load_measurements(BENCHMARKS)
    plan = make_plan(params, args.params, args.device, args.gpus, args.cores, measurements,
                     this_calibration(args, measurements))
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


def this_calibration(args, measurements):
    """This machine's calibration when asked for (--calibrate), or by default when the machine the
    calibration compares with is known and is not this one (--no-calibrate: never); else None."""
    from tprepro.plan.calibrate import calibrate, reference_machine
    from tprepro.plan.machine import this_machine

    if args.no_calibrate:
        return None
    measured, here = reference_machine(measurements), this_machine()
    if not args.calibrate and (measured is None or not measured.known or measured.cpu == here.cpu):
        return None
    why = "asked for" if args.calibrate else f"the CPU rates were measured on {measured.describe()}"
    runs = "a reference run" if args.calibration_rounds == 1 else f"{args.calibration_rounds} reference runs"
    print(f"calibrating {here.describe()} ({why}; --no-calibrate to skip): {runs} of under a minute on the "
          "measured machine", file=sys.stderr)
    return calibrate(args.params, measurements, progress=lambda line: print(line, file=sys.stderr),
                     rounds=args.calibration_rounds)
