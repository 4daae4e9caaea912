"""Will a model and its batch fit the device? An order-of-magnitude estimate, checked when params are
validated, so that a run that cannot fit (`d_model: 65536`) is refused before anything is allocated,
naming the params key, instead of dying later in the allocator.

The estimate (`training_bytes`) is a lower bound of the right order, in float32:
- weights, their gradients and Adam's two moments: 16 bytes per weight, and the model's buffers (the
  sinusoid tables of `max_positions` rows) once, both counted on the model itself, built on the meta
  device (no memory) at the registry's REFERENCE_SIZES vocabularies: every size key of the core and of
  the arch's family (`max_positions`, `ut_steps`, `lstm_hidden`, `n_fillers`, ...) counts as the
  model uses it;
- activations kept for the backward pass, per example: per encoder cell application S (8 d + 2 d_ff)
  values for the sub-layers' inputs and outputs and 2 H S² attention weights, per decoder cell
  application T (12 d + 2 d_ff) and 2 H (T² + T S), for S source and T target tokens (the experiment's
  `data.max_source_tokens` and `max_target_tokens` where it names them, else NOMINAL_TOKENS); a
  universal transformer applies its one cell `ut_steps` (or `act_max_steps`) times; recurrent
  models (LSTMs, TP-N2F) keep about 10 values per hidden unit, layer and token; times each
  process's share of `train.batch_size`.
The real peak is higher (the optimizer's temporaries, the allocator's slack), so a run estimated above
the device's memory cannot fit, and one below it may still not.

The device's memory (`device_memory`): a visible CUDA device's total memory (torch's
get_device_properties, which reads it without creating a context on the device); on `device: cpu`,
and on `device: auto` where this machine shows no GPU (auto then trains on this machine's CPU), the
machine's physical RAM (os.sysconf). Two exceptions, where the training jobs declare they run on GPU
nodes elsewhere (Snakemake on a login node submitting to them): `device: cuda` with no GPU here, and
`device: auto` whose params' `cluster.train` family requests GPUs of a named device kind
(`cluster.train.device`, as workflow/configs/paper.yaml does) outside a SLURM job; then only what no
single device could hold is refused (the larger of the RAM and LARGEST_DEVICE), and the job's own
validation, inside its SLURM job on the node it runs on, checks that node's device (a CPU node's RAM).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tprepro.errors import TpreproError

FLOAT_BYTES = 4
STATE_PER_WEIGHT = 4  # the weight, its gradient, Adam's first and second moments
NOMINAL_TOKENS = (48, 16)  # (source, target) tokens of an example where the params name no lengths
LARGEST_DEVICE = 141 * 2**30  # an H200's memory: the most one device that the project targets holds
GIB = 2**30


@dataclass(frozen=True)
class Estimate:
    state: int  # bytes of weights, gradients and optimizer state
    activations: int  # bytes of activations for one process's batch

    @property
    def total(self) -> int:
        return self.state + self.activations


def weight_count(cfg) -> int:
    """Weights of the attention and feed-forward layers of a ModelConfig (embeddings left out): the
    closed form of the standard Transformer, for a config whose arch is not registered."""
    d, ff = cfg.d_model, cfg.d_ff
    return cfg.n_encoder_layers * (4 * d * d + 2 * d * ff) + cfg.n_decoder_layers * (8 * d * d + 2 * d * ff)


def model_sizes(cfg) -> tuple[int, int]:
    """(weights, buffer values) of the model `cfg` builds, counted on the meta device (no memory, no
    initialisation) at the registry's REFERENCE_SIZES vocabularies: every size key as the arch uses it."""
    import torch

    from tprepro.models.registry import REFERENCE_SIZES, arch_task, build_model

    with torch.device("meta"):
        model = build_model(cfg, pad_id=0, **REFERENCE_SIZES[arch_task(cfg.arch)])
    return (sum(p.numel() for p in model.parameters()), sum(b.numel() for b in model.buffers()))


def _applications(cfg) -> tuple[int, int]:
    """(encoder, decoder) cell applications per token: a universal transformer's steps, else its layers."""
    steps = getattr(cfg.family, "ut_steps", None) or getattr(cfg.family, "act_max_steps", None)
    return (steps, steps) if steps else (cfg.n_encoder_layers, cfg.n_decoder_layers)


def training_bytes(cfg, batch_size: int, tokens: tuple[int, int], sizes: tuple[int, int] | None = None) -> Estimate:
    """The module docstring's estimate for one process training `cfg` on batches of `batch_size`
    examples of `tokens` (source, target) tokens; `sizes`: model_sizes(cfg), counted when not given."""
    d, ff, heads = cfg.d_model, cfg.d_ff, cfg.n_heads
    source, target = tokens
    encoder, decoder = _applications(cfg)
    per_example = (encoder * (source * (8 * d + 2 * ff) + 2 * heads * source * source)
                   + decoder * (target * (12 * d + 2 * ff) + 2 * heads * target * (target + source)))
    hidden = getattr(cfg.family, "lstm_hidden", 0)
    per_example += 10 * hidden * getattr(cfg.family, "lstm_layers", 1) * (source + target)
    weights, buffers = sizes or model_sizes(cfg)
    return Estimate(STATE_PER_WEIGHT * FLOAT_BYTES * weights + FLOAT_BYTES * buffers,
                    FLOAT_BYTES * batch_size * per_example)


def _gpu_nodes(cluster: dict | None) -> str | None:
    """The GPU kind the params' training jobs are declared to run on elsewhere (`cluster.train`: GPUs of
    a named device kind), outside a SLURM job; None: they run here."""
    train = (cluster or {}).get("train") or {}
    kind = train.get("device")
    if train.get("gpus") and kind and kind != "cpu" and not os.environ.get("SLURM_JOB_ID"):
        return kind
    return None


def device_memory(device: str, cluster: dict | None = None) -> tuple[int, str]:
    """(bytes, what they are) of the memory a job with `train.device` `device` trains in here
    (`cluster`: the params' cluster section, which may declare GPU nodes elsewhere)."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if device == "cpu":
        return ram, f"{ram / GIB:.0f} GiB of RAM"
    import torch

    if torch.cuda.is_available():
        index = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
        total = torch.cuda.get_device_properties(index).total_memory
        return total, f"{total / GIB:.0f} GiB of CUDA device {index}"
    elsewhere = _gpu_nodes(cluster)
    if device == "auto" and elsewhere is None:
        return ram, (f"{ram / GIB:.0f} GiB of RAM (device 'auto' trains on this machine's CPU: no GPU here; "
                     f"set device: cuda for jobs that run on GPU nodes elsewhere)")
    limit = max(ram, LARGEST_DEVICE)
    where = f"its jobs run on {elsewhere} nodes" if device == "auto" else "device 'cuda'"
    return limit, f"{limit / GIB:.0f} GiB (no GPU here, {where}: the most one device holds)"


def processes_here(train: dict) -> int:
    """The data-parallel processes sharing one job's batch (0: one per visible GPU, at least one)."""
    if train.get("processes", 1):
        return int(train["processes"])
    import torch

    return max(torch.cuda.device_count(), 1)


def _prefixes(section: str) -> list[list[str]]:
    """The params sections around a models mapping, outermost first: "n2f.mathqa.models" ->
    [[], ["n2f"], ["n2f", "mathqa"]]."""
    parts = section.split(".")[:-1]
    return [parts[:i] for i in range(len(parts) + 1)]


def _at(params: dict, path: list[str]) -> dict:
    for key in path:
        params = params.get(key) or {} if isinstance(params, dict) else {}
    return params if isinstance(params, dict) else {}


def section_train(params: dict, section: str) -> tuple[dict, str]:
    """The train settings the models of `section` train with (`train`, then each enclosing section's
    `train` on top, as the experiments merge them) and the key that sets their batch size."""
    merged, key = {}, "train"
    for path in _prefixes(section):
        own = _at(params, [*path, "train"])
        merged.update(own)
        if "batch_size" in own:
            key = ".".join([*path, "train"])
    return merged, key


def section_tokens(params: dict, section: str) -> tuple[int, int]:
    """(source, target) tokens of an example for the models of `section`: the innermost `data`
    section's max_source_tokens and max_target_tokens, else NOMINAL_TOKENS."""
    tokens = NOMINAL_TOKENS
    for path in _prefixes(section):
        data = _at(params, [*path, "data"])
        if "max_source_tokens" in data and "max_target_tokens" in data:
            tokens = (int(data["max_source_tokens"]), int(data["max_target_tokens"]))
    return tokens


def check_fits(cfg, where: str, train: dict, train_key: str, tokens: tuple[int, int], source: str,
               memory: tuple[int, str] | None = None, cluster: dict | None = None) -> None:
    """Refuse model `cfg` (params key `where`) trained with `train` (merged settings, from `train_key`)
    when its estimate exceeds `memory` ((bytes, description); default: device_memory's, with the params'
    `cluster` section), naming the key that dominates the estimate."""
    batch = -(-int(train["batch_size"]) // processes_here(train))
    try:
        sizes = model_sizes(cfg)
    except TpreproError as exc:  # what the arch's builder refuses (an init it does not support, say)
        raise TpreproError(f"{source}: {where}: {exc}") from exc
    estimate = training_bytes(cfg, batch, tokens, sizes)
    limit, described = memory or device_memory(train.get("device", "auto"), cluster)
    if estimate.total <= limit:
        return
    if estimate.activations > estimate.state:
        key = f"{train_key}.batch_size"
    elif FLOAT_BYTES * sizes[1] > STATE_PER_WEIGHT * FLOAT_BYTES * sizes[0]:
        key = f"{where}.max_positions"  # the buffers (sinusoid tables) outweigh the weights
    else:
        key = f"{where}.d_model"
    raise TpreproError(
        f"{source}: {key}: training {where} needs at least about {estimate.total / GIB:,.0f} GiB (weights, "
        f"gradients, Adam state and buffers {estimate.state / GIB:,.1f} GiB, activations of a batch of {batch} x "
        f"{sum(tokens)} tokens {estimate.activations / GIB:,.1f} GiB), more than the {described}; lower {key}")
