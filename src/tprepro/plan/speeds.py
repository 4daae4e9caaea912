"""The measurements a plan prices jobs with, committed under results/benchmarks/:

- throughput/<device_kind>/<preset>.json (schema tprepro.throughput/1, benchmarks/train_speed.py): a
  preset's steady-state training samples/s (and greedy decoding problems/s) on one device kind;
- stages/<device_kind>.json (schema tprepro.stage_rates/1, benchmarks/stage_rates.py): each stage's
  job seconds measured in a real pipeline run on that device kind: a fixed part per job and seconds per
  item (per preset for the stages that run a model);
- data/<device_kind>.json (schema tprepro.data_rates/1, benchmarks/data_rates.py): each Mathematics
  (split, module)'s data job CPU seconds, fitted over real jobs at two or more sizes as fixed + rate x
  problems, and the bytes its shards take per problem by module family (`disk`).

Every file names the machine it was measured on (`machine`: CPU model, cores, torch; tprepro.plan.machine),
which the writers stamp. This module owns the formats: their writers, file names and checks."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from tprepro.errors import TpreproError
from tprepro.plan.machine import UNKNOWN, UNKNOWN_MACHINE, Machine, read_machine, this_machine

BENCHMARKS = Path("results/benchmarks")
THROUGHPUT_SCHEMA = "tprepro.throughput/1"
STAGE_RATES_SCHEMA = "tprepro.stage_rates/1"
DATA_RATES_SCHEMA = "tprepro.data_rates/1"
_THROUGHPUT_KEYS = {"preset": str, "arch": str, "device_kind": str, "device": str, "commit": str, "date": str,
                    "batch_size": int, "samples_per_s": (int, float), "flops_per_sample": (int, float)}


# What a measurement may say, beyond its type: a finite number in these bounds. A speed of NaN, Infinity, 0
# or 1e-300 (or seconds of 1e300) would price a job at NaN, 0 s or 10^300 hours; each is refused by file and key.
SPEEDS = (1e-2, 1e9)  # samples or problems per second
FLOPS = (1.0, 1e16)  # per sample
FIXED_SECONDS = (0.0, 1e6)  # a job's fixed part (about 11.6 days)
SECONDS_PER_ITEM = (0.0, 1e4)  # per sample, problem or document


def check_number(value, path: Path, key: str, bounds: tuple[float, float], what: str) -> float:
    """`value` (the file's `key`) as a float: a finite number within `bounds`, else an error naming the file
    and the key."""
    low, high = bounds
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TpreproError(f"{path}: {key}: expected {what}, a number, got {value!r}")
    if not (math.isfinite(value) and low <= value <= high):
        raise TpreproError(f"{path}: {key}: {value!r} is not a plausible {what} (expected a finite number in "
                           f"[{low:g}, {high:g}]); measure again or remove the file")
    return float(value)


@dataclass(frozen=True)
class Throughput:
    preset: str
    arch: str
    device_kind: str
    device: str
    commit: str
    date: str
    batch_size: int
    samples_per_s: float
    flops_per_sample: float
    decode_problems_per_s: float | None
    path: str
    variant: str = ""  # "" for the preset's pipeline settings; else what differs (e.g. "packed"): not priced
    machine: Machine = UNKNOWN_MACHINE
    task: str = UNKNOWN  # the experiment whose data it trained on (a sample's length is the task's)
    padding_share: float | None = None  # of the positions its batches computed
    mfu_padded: float | None = None  # its FLOPs on padded shapes over the device's measured peak


@dataclass(frozen=True)
class StageRate:
    fixed_s: float  # seconds of a job that does no counted work (start-up, imports, MLflow)
    seconds_per_item: float  # on top, per item (Work.unit)


@dataclass(frozen=True)
class StageRates:
    device_kind: str
    device: str
    commit: str
    date: str
    source: str  # the run measured
    stages: dict  # stage -> {"fixed_s", "seconds_per_item"}, or {"fixed_s", "per_preset" (or "per_module"): {name: seconds_per_item}}
    path: str
    machine: Machine = UNKNOWN_MACHINE  # of the pipeline run

    def machine_of(self, stage: str) -> Machine:
        """The machine `stage`'s numbers were measured on: its fit's where a benchmark fitted it apart."""
        fit = self.stages.get(stage, {}).get("fit")
        return self.machine if fit is None else read_machine(fit.get("machine"), self.path, f"stages.{stage}.fit.machine")

    def measured_by(self, stage: str) -> str:
        """Where `stage`'s numbers come from: the pipeline run the file records, or the benchmark that fitted
        the stage apart at several sizes (its entry's `fit`)."""
        fit = self.stages.get(stage, {}).get("fit")
        if fit is None:
            return f"{stage} in a pipeline run on {self.device_kind} ({self.commit}, {self.date})"
        return f"{stage} fitted at {len(set(fit['problems']))} sizes by {fit['by']} on {self.device_kind} ({fit['commit']}, {fit['date']})"

    def rate(self, stage: str, preset: str | None, module: str | None = None) -> StageRate | None:
        """Stage `stage`'s rate (for `preset`, where its jobs run a model; for `module`, where its rate was
        measured per Mathematics module), None if not measured."""
        entry = self.stages.get(stage)
        if entry is None:
            return None
        if "per_module" in entry:
            if module not in entry["per_module"]:
                return None
            return StageRate(entry["fixed_s"], entry["per_module"][module])
        if "per_preset" in entry:
            if preset not in entry["per_preset"]:
                return None
            return StageRate(entry["fixed_s"], entry["per_preset"][preset])
        return StageRate(entry["fixed_s"], entry.get("seconds_per_item", 0.0))


def _read(path: Path, schema: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TpreproError(f"{path}: not readable as JSON ({error})") from error
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise TpreproError(f"{path}: schema: expected {schema!r}, got {data.get('schema') if isinstance(data, dict) else data!r}")
    return data


VARIANT_SEPARATOR = "-"  # <preset>-<variant>.json: a benchmark under other settings than the pipeline's


def throughput_path(root: Path, device_kind: str, preset: str, variant: str = "") -> Path:
    """Where a throughput record lives: <root>/<device_kind>/<preset>.json, a variant (packed rows, say)
    beside it as <preset>-<variant>.json, which the plan lists but does not price with."""
    return root / device_kind / f"{preset}{VARIANT_SEPARATOR + variant if variant else ''}.json"


def read_throughput(path: Path) -> Throughput:
    """One throughput file, checked: an error names the file and the key."""
    data = _read(path, THROUGHPUT_SCHEMA)
    throughput = _checked_throughput(data, path)
    if throughput_path(Path(), data["device_kind"], data["preset"], throughput.variant) != Path(path.parent.name, path.name):
        raise TpreproError(f"{path}: holds preset {data['preset']!r} on {data['device_kind']!r}; "
                           f"the file must be <device_kind>/<preset>.json (or <preset>{VARIANT_SEPARATOR}<variant>.json)")
    return throughput


def _checked_throughput(data: dict, path: Path) -> Throughput:
    for key, kind in _THROUGHPUT_KEYS.items():
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise TpreproError(f"{path}: {key}: expected {getattr(kind, '__name__', 'a number')}, got {data.get(key)!r}")
    check_number(data["samples_per_s"], path, "samples_per_s", SPEEDS, "speed in samples/s")
    check_number(data["flops_per_sample"], path, "flops_per_sample", FLOPS, "count of FLOPs per sample")
    decode = data.get("decode_problems_per_s")
    if decode is not None:
        check_number(decode, path, "decode_problems_per_s", SPEEDS, "speed in problems/s (or null)")
    variant = path.stem.removeprefix(data["preset"]).removeprefix(VARIANT_SEPARATOR)
    task = data.get("task", UNKNOWN)
    if not isinstance(task, str) or not task:
        raise TpreproError(f"{path}: task: expected the experiment whose data it trained on, got {task!r}")
    share = lambda key: data[key] if isinstance(data.get(key), (int, float)) else None  # noqa: E731
    return Throughput(data["preset"], data["arch"], data["device_kind"], data["device"], data["commit"], data["date"],
                      data["batch_size"], float(data["samples_per_s"]), float(data["flops_per_sample"]),
                      None if decode is None else float(decode), str(path), variant,
                      read_machine(data.get("machine"), path), task, share("padding_share"), share("mfu_padded"))


def write_throughput(result: dict, root: Path, variant: str = "") -> Path:
    """A preset's benchmark (schema tprepro.throughput/1, benchmarks/train_speed.py), checked as the plan reads
    it, to its file (a `variant`: beside the preset's, listed but not priced); returns the file."""
    path = throughput_path(root, result["device_kind"], result["preset"], variant)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_checked(path, {**result, "schema": THROUGHPUT_SCHEMA, "machine": _stamp(result)},
                   lambda written: _checked_throughput(_read(written, THROUGHPUT_SCHEMA), path))
    return path


def _stamp(record: dict) -> dict:
    """The machine a record to be written names: its own, else the one writing it."""
    return record.get("machine") or this_machine().as_record()


def _check_provenance(data: dict, path: Path) -> None:
    """A measurement file's provenance keys are strings, else an error naming the file and the key."""
    for key in ("device_kind", "device", "commit", "date", "source"):
        if not isinstance(data.get(key), str):
            raise TpreproError(f"{path}: {key}: expected a string, got {data.get(key)!r}")


def read_stage_rates(path: Path) -> StageRates:
    data = _read(path, STAGE_RATES_SCHEMA)
    _check_provenance(data, path)
    stages = data.get("stages")
    if not isinstance(stages, dict):
        raise TpreproError(f"{path}: stages: expected a mapping of stage -> rates")
    for stage, entry in stages.items():
        if not isinstance(entry, dict) or not all(isinstance(entry.get(key, {}), dict)
                                                  for key in ("per_preset", "per_module")):
            raise TpreproError(f"{path}: stages.{stage}: expected fixed_s and seconds_per_item (or per_preset), finite "
                               f"non-negative numbers, got {entry!r}")
        check_number(entry.get("fixed_s"), path, f"stages.{stage}.fixed_s", FIXED_SECONDS, "job's fixed seconds")
        items = {"seconds_per_item": entry.get("seconds_per_item", 0.0),
                 **{f"per_preset.{name}": value for name, value in entry.get("per_preset", {}).items()},
                 **{f"per_module.{name}": value for name, value in entry.get("per_module", {}).items()}}
        for key, value in items.items():
            check_number(value, path, f"stages.{stage}.{key}", SECONDS_PER_ITEM, "seconds per item")
        if "bytes_per_item" in entry:  # a data stage's disk per problem, in a pipeline run
            check_number(entry["bytes_per_item"], path, f"stages.{stage}.bytes_per_item", BYTES_PER_PROBLEM,
                         "bytes per item")
        if "fit" in entry:
            read_machine(entry["fit"].get("machine"), path, f"stages.{stage}.fit.machine")
    return StageRates(data["device_kind"], data["device"], data["commit"], data["date"], data["source"], stages,
                      str(path), read_machine(data.get("machine"), path))


def _write_checked(path: Path, body: dict, reader) -> None:
    """Write `body` as JSON to `path` only if `reader` accepts it: a bad measurement never replaces a good one."""
    from tprepro.io import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        reader(tmp)


def stage_rates_path(kind: str, root: Path = BENCHMARKS) -> Path:
    return root / "stages" / f"{kind}.json"


def write_stage_rates(record: dict, root: Path = BENCHMARKS) -> Path:
    """A pipeline run's stage rates (schema tprepro.stage_rates/1, benchmarks/stage_rates.py), checked as the plan
    reads them, to their device kind's file; returns the file."""
    path = stage_rates_path(record["device_kind"], root)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_checked(path, {**record, "schema": STAGE_RATES_SCHEMA, "machine": _stamp(record)}, read_stage_rates)
    return path


def update_stage_rate(kind: str, stage: str, entry: dict, root: Path = BENCHMARKS) -> Path:
    """Replace one stage's entry of the stage rates of `kind` (a stage measured apart from a pipeline run,
    e.g. at larger sizes; its `fit` stamped with the machine), checked as the plan reads it; returns the file."""
    path = stage_rates_path(kind, root)
    data = _read(path, STAGE_RATES_SCHEMA)
    if "fit" in entry:
        entry = {**entry, "fit": {**entry["fit"], "machine": _stamp(entry["fit"])}}
    data["stages"][stage] = entry
    _write_checked(path, data, read_stage_rates)
    return path


@dataclass(frozen=True)
class DataRate:
    """One (split, module)'s data job CPU seconds: fixed (the job's start-up, imports, sampler) +
    seconds_per_problem x problems, fitted through its measured sizes."""

    fixed_s: float
    seconds_per_problem: float
    sizes: tuple[int, ...]  # problems per measured job
    cpu_s: tuple[float, ...]  # its CPU seconds

    def seconds(self, problems: int) -> float:
        return self.fixed_s + self.seconds_per_problem * problems


@dataclass(frozen=True)
class DataRates:
    device_kind: str
    device: str
    commit: str
    date: str
    source: str
    jobs: dict  # "split/module" -> DataRate
    path: str
    machine: Machine = UNKNOWN_MACHINE
    disk: dict = field(default_factory=dict)  # module family -> DiskRate (shards' bytes), where measured


def data_rates_path(kind: str, root: Path = BENCHMARKS) -> Path:
    return root / "data" / f"{kind}.json"


def write_data_rates(rates: dict, *, kind: str, device: str, commit: str, date: str, source: str,
                     root: Path = BENCHMARKS, machine: Machine | None = None) -> Path:
    """Write the data rates ({"split/module": DataRate}) of device kind `kind`, measured on `machine` (default:
    this one); a `disk` entry already there is kept; returns the file written."""
    path = data_rates_path(kind, root)
    kept = _read(path, DATA_RATES_SCHEMA).get("disk") if path.is_file() else None
    body = {"schema": DATA_RATES_SCHEMA, "device_kind": kind, "device": device, "commit": commit, "date": date,
            "source": source, "machine": (machine or this_machine()).as_record(), **({"disk": kept} if kept else {}),
            "jobs": {job: {"fixed_s": round(r.fixed_s, 5), "seconds_per_problem": r.seconds_per_problem,
                           "sizes": list(r.sizes), "cpu_s": list(r.cpu_s)}
                     for job, r in sorted(rates.items())}}
    _write_checked(path, body, read_data_rates)
    return path


def read_data_rates(path: Path) -> DataRates:
    """One data-rates file, checked: an error names the file and the key."""
    data = _read(path, DATA_RATES_SCHEMA)
    _check_provenance(data, path)
    jobs = data.get("jobs")
    if not isinstance(jobs, dict):
        raise TpreproError(f"{path}: jobs: expected a mapping of split/module -> rates")
    rates = {}
    for job, entry in jobs.items():
        if not isinstance(entry, dict) or "/" not in job:
            raise TpreproError(f"{path}: jobs.{job}: expected fixed_s and seconds_per_problem, finite non-negative "
                               f"numbers, under a split/module key; got {entry!r}")
        check_number(entry.get("fixed_s"), path, f"jobs.{job}.fixed_s", FIXED_SECONDS, "job's fixed seconds")
        check_number(entry.get("seconds_per_problem"), path, f"jobs.{job}.seconds_per_problem", SECONDS_PER_ITEM,
                     "seconds per problem")
        rates[job] = DataRate(float(entry["fixed_s"]), float(entry["seconds_per_problem"]),
                              tuple(entry.get("sizes", ())), tuple(entry.get("cpu_s", ())))
    return DataRates(data["device_kind"], data["device"], data["commit"], data["date"], data["source"], rates,
                     str(path), read_machine(data.get("machine"), path), _read_disk(data.get("disk"), path))


SHARD_BYTES = (0.0, 1e7)  # a shard's bytes beside its rows (parquet's footer and schema)
BYTES_PER_PROBLEM = (1.0, 1e5)


@dataclass(frozen=True)
class DiskRate:
    """The bytes a module family's data jobs leave: shard_bytes per shard + bytes_per_problem per problem."""

    shard_bytes: float
    bytes_per_problem: float

    def bytes(self, problems: int, shards: int) -> float:
        return self.shard_bytes * shards + self.bytes_per_problem * problems


def _read_disk(entry, path: Path) -> dict:
    """{module family: DiskRate} of a data file's `disk` entry (absent: none), checked."""
    if entry is None:
        return {}
    families = entry.get("per_family") if isinstance(entry, dict) else None
    if not isinstance(families, dict) or not all(isinstance(entry.get(k), str) for k in ("commit", "date", "by")):
        raise TpreproError(f"{path}: disk: expected per_family (family -> shard_bytes, bytes_per_problem), commit, "
                           f"date and by, got {entry!r}")
    rates = {}
    for family, rate in families.items():
        where = f"disk.per_family.{family}"
        if not isinstance(rate, dict):
            raise TpreproError(f"{path}: {where}: expected shard_bytes and bytes_per_problem, got {rate!r}")
        rates[family] = DiskRate(check_number(rate.get("shard_bytes"), path, f"{where}.shard_bytes", SHARD_BYTES,
                                              "shard's fixed bytes"),
                                 check_number(rate.get("bytes_per_problem"), path, f"{where}.bytes_per_problem",
                                              BYTES_PER_PROBLEM, "bytes per problem"))
    return rates


def update_data_disk(kind: str, disk: dict, root: Path = BENCHMARKS) -> Path:
    """Replace the `disk` entry (per_family, sizes, commit, date, by) of the data rates of `kind`, checked as the
    plan reads it; returns the file."""
    path = data_rates_path(kind, root)
    data = _read(path, DATA_RATES_SCHEMA)
    data["disk"] = disk
    _write_checked(path, data, read_data_rates)
    return path


@dataclass(frozen=True)
class Measurements:
    throughput: dict  # (device_kind, preset) -> Throughput
    stage_rates: dict  # device_kind -> StageRates
    data_rates: dict = field(default_factory=dict)  # device_kind -> DataRates
    variants: list = field(default_factory=list)  # Throughput of other settings than the pipeline's (not priced)

    def on(self, device_kind: str) -> dict[str, Throughput]:
        return {preset: t for (kind, preset), t in self.throughput.items() if kind == device_kind}


def load_measurements(root: Path = BENCHMARKS) -> Measurements:
    """Every throughput and stage-rates file under `root` (none: an empty set, every job unmeasured)."""
    throughput, variants = {}, []
    for path in sorted((root / "throughput").glob("*/*.json")):
        measured = read_throughput(path)
        if measured.variant:
            variants.append(measured)
        else:
            throughput[measured.device_kind, measured.preset] = measured
    return Measurements(throughput, _by_device_kind(root, "stages", read_stage_rates),
                        _by_device_kind(root, "data", read_data_rates), variants)


def _by_device_kind(root: Path, folder: str, reader) -> dict:
    """{device kind: its measurement} of the files <root>/<folder>/<device_kind>.json, each read by `reader`."""
    found = {}
    for path in sorted((root / folder).glob("*.json")):
        measured = reader(path)
        if path.stem != measured.device_kind:
            raise TpreproError(f"{path}: device_kind {measured.device_kind!r}: the file must be "
                               f"{folder}/<device_kind>.json")
        found[measured.device_kind] = measured
    return found
