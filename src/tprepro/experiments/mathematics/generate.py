"""Generate one (split, module) of the Mathematics Dataset with the real generator.

Runs only in the generation environment (mathematics_dataset 1.0.1, sympy 1.4);
the package is imported lazily, inside worker processes only.

Each shard is sampled from its own seed, derived with sha256 from (seed, split,
module, shard index), in a freshly forked worker; the parent keeps each shard as it
completes and writes the dataset in shard order. The output bytes are therefore the
same for every process count, every PYTHONHASHSEED of the caller (see the
determinism section) and every interruption a rerun resumed from.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import itertools
import math
import multiprocessing
import multiprocessing.forkserver
import os
import random
import select
import sys
import threading
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from tprepro.experiments.mathematics.modules import EXTRAPOLATE, INTERPOLATE, TRAIN_SPLITS, difficulty_of, validate_module
from tprepro.data.resume import FinishedShards
from tprepro.data.shards import write_dataset
from tprepro.errors import TpreproError

GENERATOR = "mathematics_dataset==1.0.1"

# ---------------------------------------------------------------------------
# Determinism
#
# mathematics_dataset 1.0.1 + sympy 1.4 are not reproducible from a seed alone.
# Each source of non-determinism and the fix applied here:
#
# 1. String hashing. mathematics_dataset/util/composition.py, Context.pop:
#    `random.choice(list(allowed))` where `allowed` is a set of str, so the
#    variable letters depend on PYTHONHASHSEED (as does any iteration over sets
#    of sympy Symbols, whose hashes come from their names). Fix: workers run in
#    a forkserver started with PYTHONHASHSEED=0 and refuse to run otherwise.
# 2. Identity hashing. composition.py, expand_entities: `list(set(entities))`
#    then `random.shuffle`, where Entity hashes by memory address. Fix:
#    Entity.__hash__ returns a creation serial number, reset for every shard.
# 3. Global random stream. sympy/core/assumptions.py, _ask: `shuffle(prereq)`
#    uses the global `random` module on every assumption-cache miss, so cache
#    state shifts the stream the problems are drawn from. Fix: that `shuffle`
#    is re-bound to a private Random seeded per shard (later sympy does the
#    same with sympy.core.random._assumptions_shuffle); sympy's cache is
#    cleared per shard.
# 4. Import-time entropy. sympy/core/symbol.py, Dummy: `_prng = random.Random()`
#    seeds from os.urandom when sympy is imported, which changes the
#    dummy_index (so hashes and sort keys) of every Dummy. Fix: sympy is
#    imported while `random.Random()` defaults to seed 0.
# 5. State carried between problems (caches, memoised assumptions on shared
#    singletons, Dummy counters). Fix: every shard runs in a fresh fork of the
#    same imported interpreter (forkserver, one task per child) and seeds
#    `random` and `numpy.random` itself, so no shard sees another's leftovers.
# ---------------------------------------------------------------------------

HASH_SEED = "0"
# Set only in the forkserver's environment: its preload of this module then
# imports the package once, so forked workers start from that imported state.
_PRELOAD_ENV = "TPREPRO_GENERATE_PRELOAD"

_imported = False
_sympy_rng = random.Random(0)
_entity_serials = itertools.count()


@contextlib.contextmanager
def _seeded_random_instances() -> Iterator[None]:
    """While active, `random.Random()` without a seed is seeded with 0 (fix 4)."""
    original = random.Random

    class SeededRandom(original):
        def __init__(self, x=0):
            super().__init__(x)

    random.Random = SeededRandom
    try:
        yield
    finally:
        random.Random = original


def _patch_entity_hash() -> None:
    """Fix 2: hash Entities by creation order instead of memory address."""
    from mathematics_dataset.util import composition

    original_init = composition.Entity.__init__

    def __init__(self, *args, **kwargs):
        self._tprepro_serial = next(_entity_serials)
        original_init(self, *args, **kwargs)

    composition.Entity.__init__ = __init__
    composition.Entity.__hash__ = lambda self: self._tprepro_serial


def _import_package() -> None:
    """Import mathematics_dataset deterministically and apply the patches (idempotent)."""
    global _imported
    if _imported:
        return
    if "sympy" in sys.modules:
        raise TpreproError("sympy was imported before tprepro.experiments.mathematics.generate could make its import deterministic")
    with _seeded_random_instances():
        import sympy  # noqa: F401
        from absl import flags
        from mathematics_dataset import generate  # noqa: F401
        from mathematics_dataset.modules import modules  # noqa: F401
    importlib.import_module("sympy.core.assumptions").shuffle = _sympy_rng.shuffle  # fix 3
    _patch_entity_hash()
    # The package reads absl flags (filter, show_dropped); use their defaults.
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    _imported = True


def _require_fixed_hash_seed() -> None:
    """Fix 1: refuse to sample unless string hashing is fixed."""
    if sys.flags.hash_randomization:
        raise TpreproError(
            f"generation worker runs with hash randomization; it must be started with PYTHONHASHSEED={HASH_SEED}"
        )


def _reset_state(seed: int) -> None:
    """Seed every random stream the generator reads, and empty sympy's cache."""
    global _entity_serials
    import numpy
    from sympy.core.cache import clear_cache

    clear_cache()
    _entity_serials = itertools.count()
    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    _sympy_rng.seed(seed + 1)


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _die_with_generator(generator_pid: int) -> None:
    """Pool initializer: the worker exits as soon as the process generating the dataset does, however
    it died. A worker cannot count on its parent, the forkserver: the forkserver exits when every
    holder of its liveness pipe is gone, and each worker holds that pipe too (SIGTERM of `tprepro
    data` used to leave a worker sampling at full CPU). A thread waits on the generator's pidfd."""
    try:
        pidfd = os.pidfd_open(generator_pid)
    except ProcessLookupError:
        os._exit(70)

    def watch() -> None:
        select.select([pidfd], [], [])
        os._exit(70)

    threading.Thread(target=watch, name="die-with-generator", daemon=True).start()


def _executor(processes: int) -> ProcessPoolExecutor:
    """Workers forked from a forkserver that imported the package under fixes 1 and 4."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with _environ(PYTHONHASHSEED=HASH_SEED, **{_PRELOAD_ENV: "1"}):
        multiprocessing.forkserver.ensure_running()
    # One shard per child (fix 5).
    return ProcessPoolExecutor(max_workers=processes, mp_context=context, max_tasks_per_child=1,
                               initializer=_die_with_generator, initargs=(os.getpid(),))


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------


def shard_seed(seed: int, split: str, module: str, index: int) -> int:
    """The seed of one shard: a stable 64-bit hash of its coordinates."""
    key = f"tprepro-generate\0{seed}\0{split}\0{module}\0{index}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def shard_sizes(count: int, rows_per_shard: int) -> list[int]:
    """Row counts of the shards holding `count` rows, `rows_per_shard` at most each."""
    full, rest = divmod(count, rows_per_shard)
    return [rows_per_shard] * full + ([rest] if rest else [])


def _module_function(split: str, module: str):
    """The package's sampler for (split, module), built as its generate.py does."""
    from mathematics_dataset import generate
    from mathematics_dataset.modules import modules

    if split in TRAIN_SPLITS:
        tree = modules.train(generate._make_entropy_fn(TRAIN_SPLITS.index(split), len(TRAIN_SPLITS)))
    elif split == INTERPOLATE:
        tree = modules.test()
    elif split == EXTRAPOLATE:
        tree = modules.test_extra()
    else:
        raise TpreproError(f"unknown split {split!r}")
    return generate._filter_and_flatten(tree)[module]


# A draw that raises inside the generator (e.g. `assert sample_args.entropy == 0` in
# mathematics_dataset/sample/arithmetic.py, which arithmetic__add_sub_multiple_longer meets within
# its first 500 problems under seed 1) is dropped and redrawn, as the generator itself redraws an
# overlong problem. The redraw continues the shard's random streams, so the shard stays a function of
# its seed. A shard whose dropped draws pass `error_rate` of its rows (at least MIN_ERRORS_ALLOWED; a rate
# of 0 allows none) fails, with the generator's own traceback: a module that mostly raises is broken.
MAX_ERROR_RATE = 0.01
MIN_ERRORS_ALLOWED = 10


@dataclass(frozen=True)
class Shard:
    """One generated shard: its (question, answer) pairs and the draws dropped because they raised."""

    pairs: list[tuple[str, str]]
    errors: int


def errors_allowed(rows: int, error_rate: float = MAX_ERROR_RATE) -> int:
    """Draws a shard of `rows` problems may drop because the generator raised."""
    return max(MIN_ERRORS_ALLOWED, math.floor(error_rate * rows)) if error_rate > 0 else 0


def _generate_shard(task: tuple[str, str, int, int, int, int]) -> Shard:
    """Worker: sample one shard's (question, answer) pairs, dropping at most `allowed` raising draws."""
    split, module, seed, index, rows, allowed = task
    _require_fixed_hash_seed()
    _import_package()
    from mathematics_dataset import generate

    sampler = _module_function(split, module)
    _reset_state(shard_seed(seed, split, module, index))
    pairs, errors = [], 0
    while len(pairs) < rows:
        try:
            # sample_from_module drops questions > 160 and answers > 30 characters.
            problem, _dropped = generate.sample_from_module(sampler)
        except Exception:  # noqa: BLE001 - any failure inside the generator is one dropped draw
            errors += 1
            if errors > allowed:
                raise TpreproError(
                    f"{split}/{module} shard {index}: the generator raised on {errors} draws for "
                    f"{len(pairs)} problems made (at most {allowed} allowed for {rows}); the last one:\n"
                    + traceback.format_exc().rstrip()
                ) from None
            continue
        pairs.append((str(problem.question), str(problem.answer)))
    return Shard(pairs, errors)


def generate_dataset(
    split: str,
    module: str,
    out: str | os.PathLike,
    *,
    seed: int,
    count: int,
    rows_per_shard: int,
    processes: int = 1,
    error_rate: float = MAX_ERROR_RATE,
) -> None:
    """Generate `count` problems of (split, module) into the dataset directory `out`.

    Each shard is kept as it is made (tprepro.data.resume: a rerun after a kill makes only the rest); the
    dataset is built from them in a temporary directory and swapped in only when complete. The manifest's
    `generator_errors` lists each shard's draws dropped because the generator raised.
    """
    validate_module(split, module)
    if count < 1 or rows_per_shard < 1 or processes < 1:
        raise TpreproError(
            f"count, rows_per_shard and processes must be >= 1 (got {count}, {rows_per_shard}, {processes})"
        )
    difficulty = difficulty_of(split)
    tasks = [(split, module, seed, i, n, errors_allowed(n, error_rate))
             for i, n in enumerate(shard_sizes(count, rows_per_shard))]
    identity = {"split": split, "module": module, "seed": seed, "count": count, "rows_per_shard": rows_per_shard,
                "error_rate": error_rate, "generator": GENERATOR}
    finished = FinishedShards(Path(out), identity)
    kept = finished.open()
    todo = [task for task in tasks if task[3] not in kept]
    if len(todo) < len(tasks):
        print(f"{split}/{module}: {len(tasks) - len(todo)} of {len(tasks)} shards kept from an interrupted earlier "
              f"run ({finished.path})", file=sys.stderr, flush=True)
    if todo:
        executor = _executor(min(processes, len(todo)))
        try:
            index_of = {executor.submit(_generate_shard, task): task[3] for task in todo}
            for future in as_completed(index_of):  # each shard is kept as soon as it is made
                shard = future.result()
                finished.save(index_of[future], [{"question": q, "answer": a, "module": module, "split": split,
                                                  "difficulty": difficulty} for q, a in shard.pairs],
                              errors=shard.errors)
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
    errors = [finished.notes[i]["errors"] for i in range(len(tasks))]
    write_dataset(Path(out), finished.rows(len(tasks)), split=split, module=module, seed=seed, source="generate",
                  generator=GENERATOR, generator_errors=errors)
    finished.remove()
    if any(errors):
        print(f"{split}/{module}: {sum(errors)} draws dropped because the generator raised "
              f"(per shard: {errors}; at most {errors_allowed(rows_per_shard, error_rate)} allowed per shard)",
              file=sys.stderr, flush=True)


if os.environ.get(_PRELOAD_ENV) == "1":
    # A failure here would kill the forkserver; workers retry and report it.
    with contextlib.suppress(Exception):
        _import_package()
