"""This machine's CPU speed against the measurements the plan prices CPU jobs with: a short reference run.

The committed CPU rates were measured on one machine (results/benchmarks/*/cpu.json name it where it was
recorded); a machine of the same class can take 1.6-2.6x their CPU seconds. `calibrate` runs, on the
machine at hand, real data jobs at the very sizes results/benchmarks/data/<kind>.json measured them (the
real generator, `--processes 1`, four module families) and a vocabulary slice over their shards (each shard
listed VOCAB_COPIES times, priced by the vocab stage's fit), each counted in CPU seconds with every process it
started (tprepro.plan.cpu_seconds). Each job's ratio is its CPU seconds here over the measured (or fitted)
ones. The module families do not share one speed ratio between two machines (on one VM the calculus jobs ran
at x1.3 of the measured machine where the median job ran at x0.95, docs/calibration-2026-11-28.md), so a data
job of a family the reference holds is scaled by that family's own reference jobs, the vocab stage by the
vocabulary slice, and every other CPU rate by the median over all the reference jobs. About 30 CPU-seconds on
the measured machine, two jobs at a time: under a minute on 2 cores. A shared machine's speed drifts with its
load (x1.5 to x1.9 within an hour on one, docs/calibration-2026-11-28.md): the factors are the speed at their
time. More rounds of the reference (`--calibration-rounds`) pool more jobs into each median: factors less
moved by one job's noisy minute.

On SLURM the plan runs on the login node, whose speed says nothing of the compute nodes: run the
calibration as a job of the partition (`srun --partition cpu tprepro plan --params FILE --calibrate`) and set
the factor it prints as `cluster.<family>.cpu_factor` (docs/plan.md)."""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.plan.cpu_seconds import counted
from tprepro.plan.machine import Machine, this_machine
from tprepro.plan.speeds import Measurements
from tprepro.work import Work, module_family

CPU = "cpu"  # the device kind of CPU measurements
VOCAB = "vocab"  # the stage the vocabulary slice is priced as

# (split, module, problems): data jobs measured at exactly these sizes in data/<kind>.json (4-7 s of CPU each
# there), one per module family of the costly kinds and one cheap module at 20,000 problems in 4 shards.
REFERENCE_JOBS = (("train-easy", "algebra__polynomial_roots", 1_000),
                  ("train-hard", "probability__swr_p_level_set", 200),
                  ("train-hard", "calculus__differentiate", 200),
                  ("train-easy", "arithmetic__add_or_sub", 20_000))
ROWS_PER_SHARD = 5_000  # as paper.yaml writes them; the sizes of 200 and 1,000 are one shard either way
DATA_SEED = 1  # the measurements' data seed (paper.yaml's)
VOCAB_COPIES = 70  # the vocabulary slice reads the reference's 21,400 problems 70 times: 1.5 million


def family_key(family: str) -> str:
    """The name a module family's data jobs are priced under (`algebra__*`)."""
    return f"{family}__*"


@dataclass(frozen=True)
class ReferenceJob:
    name: str
    cpu_s: float  # here
    reference_s: float  # measured (data jobs) or fitted (the vocabulary) on the measured machine
    prices: str  # what its ratio prices on its own: a module family's data jobs (family_key) or a stage

    @property
    def ratio(self) -> float:
        return self.cpu_s / self.reference_s


@dataclass(frozen=True)
class Calibration:
    factor: float  # the median ratio of all reference jobs: every CPU rate without reference jobs of its own
    machine: Machine
    jobs: tuple[ReferenceJob, ...] = ()
    source: str = ""  # where the factor comes from, when not from a reference run here
    load: tuple[float, ...] = ()  # the machine's 1-minute load average before and after the reference run

    @cached_property
    def own_factors(self) -> dict[str, float]:
        """{module family (family_key) or stage: the median ratio of its own reference jobs, of every round}."""
        ratios: dict[str, list[float]] = defaultdict(list)
        for job in self.jobs:
            ratios[job.prices].append(job.ratio)
        return {prices: round(statistics.median(found), 3) for prices, found in sorted(ratios.items())}

    def factor_for(self, stage: str, work: Work) -> tuple[float, str]:
        """(factor, why) for one CPU job: its module family's or its stage's own reference jobs', else the median's."""
        prices = family_key(work.module_family) if work.kind == "generate" and work.module else stage
        if prices in self.own_factors:
            return self.own_factors[prices], f"calibrated on this machine, {prices} reference jobs"
        return self.factor, "calibrated on this machine"

    def describe(self) -> str:
        if not self.jobs:
            return f"x{self.factor:.2f} ({self.source})"
        ratios = sorted(job.ratio for job in self.jobs)
        load = f", load average {max(self.load):.1f}" if self.load else ""
        own = ", ".join(f"{prices} x{factor:.2f}" for prices, factor in self.own_factors.items())
        return (f"x{self.factor:.2f}: {self.machine.describe()}, the median of {len(self.jobs)} reference jobs' "
                f"CPU seconds over the measured ones ({ratios[0]:.2f}-{ratios[-1]:.2f}{load})"
                + (f"; by their own reference jobs {own}" if own else ""))

    def as_record(self) -> dict:
        return {"factor": self.factor, "own_factors": self.own_factors, "machine": self.machine.as_record(),
                "source": self.source, "load_average": list(self.load),
                "jobs": [{"job": j.name, "prices": j.prices, "cpu_s": j.cpu_s, "reference_s": j.reference_s,
                          "ratio": round(j.ratio, 3)} for j in self.jobs]}


def reference_seconds(measurements: Measurements, kind: str = CPU) -> dict[str, float]:
    """{"split/module@problems": CPU seconds} of each reference data job as data/<kind>.json measured it;
    an error names the file and the job where one is not there."""
    rates = measurements.data_rates.get(kind)
    if rates is None:
        raise TpreproError(f"calibration: no data rates measured on {kind} (results/benchmarks/data/{kind}.json)")
    found = {}
    for split, module, problems in REFERENCE_JOBS:
        job = f"{split}/{module}"
        fit = rates.jobs.get(job)
        measured = dict(zip(fit.sizes, fit.cpu_s)) if fit else {}
        if problems not in measured:
            raise TpreproError(f"{rates.path}: jobs.{job}: no job measured at {problems:,} problems, the size the "
                               "calibration reruns (tprepro.plan.calibrate.REFERENCE_JOBS)")
        found[f"{job}@{problems}"] = measured[problems]
    return found


def replicate(source: Path, target: Path, copies: int) -> int:
    """`target`: the dataset `source` with its shards listed `copies` times (links to the same files, the
    manifest written as the data stage writes it); its rows."""
    from tprepro.data.shards import open_dataset, shard_name, write_manifest

    dataset = open_dataset(source, verify=False)
    target.mkdir(parents=True)
    paths = []
    for _ in range(copies):
        for shard in dataset.files:
            paths.append(target / shard_name(len(paths)))
            os.symlink(shard.resolve(), paths[-1])
    write_manifest(target, paths, **{k: v for k, v in dataset.manifest.items() if k not in ("rows", "shards")})
    return dataset.rows * copies


def _params(base: str, folder: Path, name: str, problems: int, modules: list[str]) -> Path:
    """A params file that is `base` with the reference's data settings and modules (the one interpreted too)."""
    from tprepro.params import EXTENDS

    path = folder / f"{name}.yaml"
    path.write_text(f"{EXTENDS}: {Path(base).resolve()}\n"
                    f"grid: {{modules: [{', '.join(modules)}]}}\ninterpret: {{module: {modules[0]}}}\n"
                    f"data: {{source: generate, seed: {DATA_SEED}, train_per_module: {problems}, "
                    f"test_per_module: {problems}, rows_per_shard: {ROWS_PER_SHARD}}}\n", encoding="utf-8")
    return path


def calibrate(params_path: str, measurements: Measurements, kind: str = CPU, tprepro: str | None = None,
              progress=None, rounds: int = 1) -> Calibration:
    """Run the reference on this machine `rounds` times (see the module's doc); its factor, the median over every
    round's jobs. `params_path` is the base of the reference's params files (any valid params file: its grid and
    data settings are replaced)."""
    if rounds < 1:
        raise TpreproError(f"calibration: rounds must be at least 1, not {rounds}")
    references = reference_seconds(measurements, kind)
    vocab = measurements.stage_rates.get(kind).rate(VOCAB, None) if kind in measurements.stage_rates else None
    if vocab is None:
        raise TpreproError(f"calibration: no vocab stage rate measured on {kind} (results/benchmarks/stages/{kind}.json)")
    tprepro = tprepro or str(Path(sys.executable).with_name("tprepro"))
    say = progress or (lambda text: None)
    load = os.getloadavg()[0]
    done: list[ReferenceJob] = []
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="tprepro-calibration-") as scratch:
            if rounds > 1:
                say(f" round {round_ + 1} of {rounds}:")
            done += _reference_round(params_path, Path(scratch), references, vocab, tprepro, say)
    factor = statistics.median(job.ratio for job in done)
    return Calibration(round(factor, 3), this_machine(), tuple(done), load=(load, os.getloadavg()[0]))


def _reference_round(params_path: str, folder: Path, references: dict[str, float], vocab, tprepro: str,
                     say) -> list[ReferenceJob]:
    """One run of the reference data jobs (two at a time) and the vocabulary slice over their shards, in `folder`."""

    def data_job(job: tuple[tuple[str, str, int], tuple[str, float]]) -> ReferenceJob:
        (split, module, problems), (name, reference) = job
        params = _params(params_path, folder, f"{split}-{module}", problems, [module])
        seconds = counted([tprepro, "data", "--params", str(params), "--split", split, "--module", module,
                           "--out", str(folder / "data" / split / module), "--processes", "1"])["cpu_s"]
        say(f"  data {name}: {seconds:.1f} CPU-s here, {reference:.1f} measured (x{seconds / reference:.2f})")
        return ReferenceJob(f"data {name}", seconds, reference, family_key(module_family(module)))

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:  # CPU seconds are per job
        done = list(pool.map(data_job, zip(REFERENCE_JOBS, references.items())))
    rows = sum(replicate(folder / "data" / split / module, folder / "slice" / module, VOCAB_COPIES)
               for split, module, _ in REFERENCE_JOBS)
    params = _params(params_path, folder, "vocab", 1, [module for _, module, _ in REFERENCE_JOBS])
    seconds = counted([tprepro, VOCAB, "--params", str(params), "--train", str(folder / "slice"),
                       "--out", str(folder / "vocab.json")])["cpu_s"]
    fitted = vocab.fixed_s + vocab.seconds_per_item * rows
    say(f"  vocab over {rows:,} problems: {seconds:.1f} CPU-s here, {fitted:.1f} fitted (x{seconds / fitted:.2f})")
    return [*done, ReferenceJob(f"vocab over {rows:,} problems", seconds, fitted, VOCAB)]


def cpu_factor(params: dict, job, work: Work, calibration: Calibration | None) -> tuple[float, str]:
    """(factor, why) a CPU-priced job's measured seconds are multiplied by: its rule family's
    `cluster.<family>.cpu_factor` (its partition's nodes, measured by a calibration job), else this machine's
    calibration (Calibration.factor_for), else 1 (the measured machine's speed)."""
    family = params["cluster"][job.family] if job.family else {}
    if family.get("cpu_factor") is not None:
        return family["cpu_factor"], f"cluster.{job.family}.cpu_factor"
    if calibration is not None:
        return calibration.factor_for(job.stage, work)
    return 1.0, ""


def scaled(guess, factor: float, why: str):
    """`guess` (an Estimate) with its seconds multiplied by `factor`, its source saying why."""
    if guess.seconds is None or factor == 1.0:
        return guess
    return dataclasses.replace(guess, seconds=guess.seconds * factor, source=f"{guess.source}; x {factor:.2f} ({why})")


def cpu_machines(measurements: Measurements, kind: str = CPU) -> dict[str, list[str]]:
    """{machine description: the CPU measurements made on it}: the CPUs the plan's CPU rates assume."""
    found: dict[str, list[str]] = {}
    if kind in measurements.data_rates:
        found.setdefault(measurements.data_rates[kind].machine.describe(), []).append(f"data/{kind}.json")
    rates = measurements.stage_rates.get(kind)
    if rates is not None:
        for stage in rates.stages:
            what = f"stages/{kind}.json" + (f" ({stage} fit)" if "fit" in rates.stages[stage] else "")
            found.setdefault(rates.machine_of(stage).describe(), [])
            if what not in found[rates.machine_of(stage).describe()]:
                found[rates.machine_of(stage).describe()].append(what)
    for (device_kind, preset), measured in sorted(measurements.throughput.items()):
        if device_kind == kind:
            found.setdefault(measured.machine.describe(), []).append(f"throughput/{kind}/{preset}.json")
    return found


def reference_machine(measurements: Measurements, kind: str = CPU) -> Machine | None:
    """The machine a calibration compares this one with: the data fits' (their measured jobs are its reference)."""
    rates = measurements.data_rates.get(kind)
    return rates.machine if rates is not None else None
