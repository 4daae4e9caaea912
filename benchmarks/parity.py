"""Parity with the TP-Transformer authors' model files: same weights and batches give the same losses.

Loads the authors' own model files (ischlag/TP-Transformer: models/tp-transformer.py, models/transformer.py)
from a fetched copy of their repository, unmodified, beside the project's model, and trains both with the
authors' training step (cross-entropy over non-pad targets, gradient norm clipped, Adam) on identical batches.

- `--mode same` (the parity check): the authors' freshly initialised weights are copied into the project's
  model (`map_weights`), both run in float64, and the per-step losses must agree to `--tolerance` (relative).
  When they do not, the first module whose output differs on the first step's batch is named, then the first
  parameter whose gradient differs, then the first whose value after one Adam step differs.
- `--mode own`: each side starts from its own initialisation (the project's `init` setting against the authors'
  reset methods) under the same seed and trains on the same batches in float32; per seed the mean training
  loss per window and a held-out loss (a fixed sample never trained on) are reported, and the project's gap to
  the authors' mean per window.

    python -m benchmarks.parity --authors ../TP-Transformer                          # same weights, tiny, 100 steps
    python -m benchmarks.parity --authors ../TP-Transformer --mode own --size d128 --steps 3000 --seeds 1 2 3
    python -m benchmarks.parity --authors ../TP-Transformer --mode own --init authors authors_xavier --seeds 1 2 3

Batches are random (uniformly shuffled rows, padded to the longest) from one real Mathematics sample, made by
the real generator through the project's data stage (benchmarks.kit.sample), or random tokens (`--data synthetic`).
Prints a table and writes JSON (`--out`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import random
import statistics
import sys
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from tprepro.data.batching import Batch
from tprepro.models.config import INITS
from tprepro.models.registry import build_model, resolve_model_config

from benchmarks.kit import overrides
from benchmarks.kit.report import stamp, write_report
from benchmarks.kit.sample import REPO, all_rows, training_sample

AUTHORS_FILES = {"tp_transformer": "models/tp-transformer.py", "transformer": "models/transformer.py"}
PRESETS = {"tp_transformer": "tp_transformer_tiny", "transformer": "transformer_tiny"}
# The kit's sizes (tiny, d128) and the paper's.
SIZES = {**overrides.SIZES,
         "paper": {"d_model": 512, "n_heads": 8, "d_ff": 2048, "n_encoder_layers": 6, "n_decoder_layers": 6}}
AUTHORS_MAX_LENGTH = 200  # their sinusoid table's length


# ---- the authors' model --------------------------------------------------------------------------
def load_authors_module(repo: Path, arch: str):
    """Import the authors' model file for `arch` from their repository folder."""
    path = Path(repo) / AUTHORS_FILES[arch]
    if not path.is_file():
        raise SystemExit(f"--authors: {path} not found (a fetched copy of ischlag/TP-Transformer)")
    spec = importlib.util.spec_from_file_location(f"authors_{arch}", path)
    module = importlib.util.module_from_spec(spec)
    with authors_utils(Path(repo)):
        spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def authors_utils(repo: Path):
    """While their model file loads, its `from utils.lib import ...` finds their repository's utils/ folder:
    `utils` is their folder for that time only (nothing joins the import path; a `utils` imported before is
    back afterwards)."""
    names = ("utils", "utils.lib")
    before = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    package = types.ModuleType("utils")
    package.__path__ = [str(repo / "utils")]
    sys.modules["utils"] = package
    try:
        yield
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(before)


def build_authors(module, sizes: dict, vocab_size: int, pad_id: int) -> nn.Module:
    """Their `build_transformer` with their argument names (one layer count for encoder and decoder)."""
    if sizes["n_encoder_layers"] != sizes["n_decoder_layers"]:
        raise SystemExit("the authors' models have as many decoder as encoder layers")
    params = argparse.Namespace(input_dim=vocab_size, hidden=sizes["d_model"], filter=sizes["d_ff"],
                                n_layers=sizes["n_encoder_layers"], n_heads=sizes["n_heads"], dropout=0.0)
    return module.build_transformer(params=params, pad_idx=pad_id)


def authors_loss(model: nn.Module, batch: Batch, pad_id: int) -> torch.Tensor:
    """Their training step's loss: logits = model(src, trg[:, :-1]), cross-entropy against trg[:, 1:]."""
    trg = torch.cat([batch.tgt_in[:, :1], batch.tgt_out], dim=1)  # [B, T+1]: start, answer, end, padding
    logits = model(batch.src, trg[:, :-1])  # [B, T, V]
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), trg[:, 1:].reshape(-1), ignore_index=pad_id)


def project_loss(model: nn.Module, batch: Batch, pad_id: int) -> torch.Tensor:
    logits = model(batch.src, batch.tgt_in)  # [B, T, V]
    return F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=pad_id)


# ---- weights: the authors' names -> the project's ------------------------------------------------
_ATTENTION = {"W_q": "q_proj", "W_k": "k_proj", "W_v": "v_proj", "W_o": "out_proj", "W_r": "binding.role_proj",
              "w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "linear": "out_proj"}
_ENCODER = {"layernorm1": "attn_norm", "MHA": "self_attn", "layernorm2": "ff_norm", "densefilter": "ff",
            "layernorm3": "out_norm"}
_DECODER = {"layernorm1": "self_norm", "selfAttn": "self_attn", "layernorm2": "cross_norm", "encAttn": "cross_attn",
            "layernorm3": "ff_norm", "densefilter": "ff", "layernorm4": "out_norm"}
_FEEDFORWARD = {"linear1": "expand", "linear2": "contract"}


def project_name(name: str) -> str | None:
    """The project's parameter or module name for one of the authors'; None where the project has none
    (their dropouts, their model's top)."""
    parts = name.split(".")
    if parts[0] == "embedding" and len(parts) > 1:
        renamed = {"tok_embedding": "tokens", "linear": "role"}.get(parts[1])
        return renamed and ".".join(["embedding", renamed, *parts[2:]])
    if parts[0] not in ("encoder", "decoder") or len(parts) < 4:
        return None
    side, layer, sub, tail = parts[0], parts[2], parts[3], parts[4:]
    table = _ENCODER if side == "encoder" else _DECODER
    if sub not in table:
        return None
    lookup = _FEEDFORWARD if sub == "densefilter" else _ATTENTION if sub in ("MHA", "selfAttn", "encAttn") else None
    if tail and lookup is not None:
        if tail[0] not in lookup:
            return None
        tail = [lookup[tail[0]], *tail[1:]]
    return ".".join([side, layer, table[sub], *tail])


def map_weights(authors: nn.Module, project: nn.Module) -> None:
    """Copy every authors' parameter into the project's model (the role bias with their +1 folded in,
    as `init: authors` does); fails on a parameter either side leaves unmapped."""
    target = dict(project.named_parameters())
    seen = set()
    with torch.no_grad():
        for name, value in authors.named_parameters():
            mapped = project_name(name)
            if mapped not in target:
                raise KeyError(f"authors' parameter {name} has no counterpart (mapped to {mapped})")
            offset = 1.0 if mapped == "embedding.role.bias" else 0.0  # their r = W e + b + 1
            target[mapped].copy_(value + offset)
            seen.add(mapped)
    missing = sorted(set(target) - seen)
    if missing:
        raise KeyError(f"project parameters without an authors' counterpart: {', '.join(missing)}")


# ---- diagnosis: the first module, gradient or update that differs ----------------------------------
def record_outputs(model: nn.Module, names: list[str]) -> tuple[dict[str, torch.Tensor], list]:
    """Forward hooks storing each named module's first tensor output, in call order."""
    outputs, handles, modules = {}, [], dict(model.named_modules())

    def hook(name):
        def store(_module, _inputs, output):
            tensor = output[0] if isinstance(output, tuple) else output
            outputs.setdefault(name, tensor.detach().clone())
        return store

    for name in names:
        handles.append(modules[name].register_forward_hook(hook(name)))
    return outputs, handles


def source_positions(name: str) -> bool:
    """Whether the authors' module `name` outputs one vector per source position: the embedding (its first
    call embeds the source), the encoder, and the keys and values of the decoder's encoder attention."""
    return name.startswith(("embedding", "encoder")) or (".encAttn." in name and name[-3:] in ("W_k", "W_v", "w_k", "w_v"))


def relative_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def first_difference(authors: nn.Module, project: nn.Module, batch: Batch, pad_id: int, lr: float,
                     betas: tuple[float, float], grad_clip: float, tolerance: float) -> dict | None:
    """On one batch from equal weights: the first module output, gradient or one-step update (in that
    order, modules in the authors' call order) that differs beyond `tolerance`; None if nothing does.
    Outputs are compared where they reach the loss: real source positions, and target positions with a
    real target (the authors' decoder attends uniformly from a padded query; its output there is unused)."""
    pairs = [(name, project_name(name)) for name, _ in authors.named_modules()]
    project_modules = dict(project.named_modules())
    pairs = [(a, p) for a, p in pairs if a and p in project_modules]
    a_out, a_handles = record_outputs(authors, [a for a, _ in pairs])
    p_out, p_handles = record_outputs(project, [p for _, p in pairs])
    a_loss, p_loss = authors_loss(authors, batch, pad_id), project_loss(project, batch, pad_id)
    for handle in a_handles + p_handles:
        handle.remove()
    order = sorted((a for a, _ in pairs if a in a_out), key=list(a_out).index)
    mapped = dict(pairs)
    src_real, tgt_real = batch.src != pad_id, batch.tgt_out != pad_id  # [B, S], [B, T]
    for name in order:
        a, p = a_out[name], p_out.get(mapped[name])
        if p is None or a.shape != p.shape:
            return {"what": "output shape", "module": name, "project": mapped[name]}
        if mapped[name] == "embedding.role":
            a = a + 1.0  # their r = W e + b + 1
        keep = src_real if source_positions(name) else tgt_real  # positions whose values reach the loss
        diff = relative_difference(p[keep], a[keep]) if a.dim() == 3 else relative_difference(p, a)
        if diff > tolerance:
            return {"what": "output", "module": name, "project": mapped[name], "relative_difference": diff}
    if relative_difference(p_loss, a_loss) > tolerance:
        return {"what": "loss", "authors": float(a_loss), "project": float(p_loss)}

    a_loss.backward(), p_loss.backward()
    project_params = dict(project.named_parameters())
    for name, param in authors.named_parameters():
        diff = relative_difference(project_params[project_name(name)].grad, param.grad)
        if diff > tolerance:
            return {"what": "gradient", "parameter": name, "project": project_name(name), "relative_difference": diff}

    for model in (authors, project):
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        torch.optim.Adam(model.parameters(), lr=lr, betas=betas).step()
    for name, param in authors.named_parameters():
        other = project_params[project_name(name)] - (1.0 if project_name(name) == "embedding.role.bias" else 0.0)
        diff = relative_difference(other.detach(), param.detach())
        if diff > tolerance:
            return {"what": "update", "parameter": name, "project": project_name(name), "relative_difference": diff}
    return None


# ---- training both sides --------------------------------------------------------------------------
def train_losses(model: nn.Module, loss_fn, batches: list[Batch], pad_id: int, lr: float,
                 betas: tuple[float, float], grad_clip: float) -> list[float]:
    """The authors' step on each batch in turn: loss, backward, clip, Adam. Per-step losses."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=betas)
    model.train()
    losses = []
    for batch in batches:
        loss = loss_fn(model, batch, pad_id)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def held_out_loss(model: nn.Module, loss_fn, batches: list[Batch], pad_id: int) -> float:
    """Mean cross-entropy per target token over `batches`."""
    model.eval()
    total = tokens = 0.0
    for batch in batches:
        n = int((batch.tgt_out != pad_id).sum())
        total += float(loss_fn(model, batch, pad_id)) * n
        tokens += n
    model.train()
    return total / tokens


# ---- data -----------------------------------------------------------------------------------------
def synthetic_batches(n: int, batch_size: int, vocab_size: int, pad_id: int, seed: int) -> list[Batch]:
    """Random token sequences of random lengths, right-padded: ids 1 (start) and 2 (end) frame them."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n):
        src_len = torch.randint(3, 20, (batch_size,), generator=generator)
        tgt_len = torch.randint(2, 10, (batch_size,), generator=generator)
        src = torch.full((batch_size, int(src_len.max()) + 2), pad_id)
        tgt = torch.full((batch_size, int(tgt_len.max()) + 2), pad_id)
        for row in range(batch_size):
            s, t = int(src_len[row]), int(tgt_len[row])
            src[row, : s + 2] = torch.cat([torch.tensor([1]), torch.randint(4, vocab_size, (s,), generator=generator),
                                           torch.tensor([2])])
            tgt[row, : t + 2] = torch.cat([torch.tensor([1]), torch.randint(4, vocab_size, (t,), generator=generator),
                                           torch.tensor([2])])
        tgt_out = tgt[:, 1:].clone()
        batches.append(Batch(src, tgt[:, :-1].masked_fill(tgt[:, :-1] == 2, pad_id), tgt_out,
                             int((tgt_out != pad_id).sum())))
    return batches


def mathematics_sample(per_module: int, seed: int, cache: Path):
    """(rows, vocab): one real sample of every training module and difficulty (the kit's, the learning
    benchmark's cache)."""
    datasets, vocab = training_sample(cache, per_module, max(1, per_module // 3), seed)
    rows, _ = all_rows(datasets)
    return rows, vocab


def row_batches(rows, vocab, batch_size: int, n: int, seed: int) -> list[Batch]:
    """`n` random batches: rows shuffled uniformly each epoch (seeded), padded to the longest."""
    rng, order, batches = random.Random(seed), list(rows), []
    while len(batches) < n:
        rng.shuffle(order)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            batches.append(vocab.collate(order[start: start + batch_size]))
            if len(batches) == n:
                break
    return batches


# ---- the two modes --------------------------------------------------------------------------------
def build_pair(arch: str, authors_module, sizes: dict, vocab_size: int, pad_id: int, seed: int, init: str,
               dtype: torch.dtype, shared: bool) -> tuple[nn.Module, nn.Module]:
    """The authors' model and the project's under `seed`; with `shared`, the project's takes the authors' weights."""
    torch.manual_seed(seed)
    authors = build_authors(authors_module, sizes, vocab_size, pad_id)
    torch.manual_seed(seed)
    config = resolve_model_config(PRESETS[arch], {**sizes, "init": init, "dropout": 0.0,
                                                  "max_positions": AUTHORS_MAX_LENGTH})
    project = build_model(config, vocab_size=vocab_size, pad_id=pad_id)
    if shared:
        map_weights(authors, project)
    return authors.to(dtype), project.to(dtype)


def same_weights(arch, authors_module, sizes, batches, vocab_size, pad_id, args) -> dict:
    """Both sides from the authors' weights in float64: per-step losses, the largest relative gap, and
    (when it exceeds the tolerance) the first module, gradient or update that differs."""
    torch.set_default_dtype(torch.float64)
    try:
        batches = [dataclasses.replace(b) for b in batches]
        pair = lambda: build_pair(arch, authors_module, sizes, vocab_size, pad_id, args.seeds[0], "authors",
                                  torch.float64, shared=True)  # noqa: E731
        authors, project = pair()
        a = train_losses(authors, authors_loss, batches, pad_id, args.lr, args.betas, args.grad_clip)
        p = train_losses(project, project_loss, batches, pad_id, args.lr, args.betas, args.grad_clip)
        gaps = [abs(x - y) / abs(x) for x, y in zip(a, p)]
        result = {"arch": arch, "mode": "same", "steps": len(batches), "authors_loss": a, "project_loss": p,
                  "max_relative_gap": max(gaps), "first_step_over": next((i + 1 for i, g in enumerate(gaps)
                                                                        if g > args.tolerance), None)}
        if result["first_step_over"] is not None:
            authors, project = pair()
            result["first_difference"] = first_difference(authors, project, batches[0], pad_id, args.lr, args.betas,
                                                          args.grad_clip, args.tolerance)
        return result
    finally:
        torch.set_default_dtype(torch.float32)


def own_init(arch, authors_module, sizes, batches, held_out, vocab_size, pad_id, args) -> dict:
    """Each side from its own initialisation (the project's under every `--init`), per seed on the same
    batches: window losses and held-out loss; and the parameters whose starting scale differs."""
    runs = []
    for seed in args.seeds:
        sides = [("authors", "authors", authors_loss)] + [(f"project:{init}", init, project_loss) for init in args.init]
        for side, init, loss_fn in sides:
            authors, project = build_pair(arch, authors_module, sizes, vocab_size, pad_id, seed, init,
                                          torch.float32, shared=False)
            model = authors if side == "authors" else project
            started = time.perf_counter()
            losses = train_losses(model, loss_fn, batches[seed], pad_id, args.lr, args.betas, args.grad_clip)
            windows = [statistics.fmean(losses[i: i + args.window]) for i in range(0, len(losses), args.window)]
            runs.append({"seed": seed, "side": side, "window_loss": windows,
                         "held_out_loss": held_out_loss(model, loss_fn, held_out, pad_id),
                         "seconds": time.perf_counter() - started})
            print(f"{arch:<15} seed {seed} {side:<24} " + " ".join(f"{w:.3f}" for w in windows)
                  + f" | held-out {runs[-1]['held_out_loss']:.4f} ({runs[-1]['seconds']:.0f} s)", flush=True)
    scales = {init: init_scale_differences(*build_pair(arch, authors_module, sizes, vocab_size, pad_id, args.seeds[0],
                                                       init, torch.float32, shared=False)) for init in args.init}
    return {"arch": arch, "mode": "own", "runs": runs, "init_scales": scales,
            "gap": {init: window_gaps(runs, f"project:{init}") for init in args.init}}


def init_scale_differences(authors: nn.Module, project: nn.Module, tolerance: float = 0.1) -> dict[str, dict]:
    """Parameters (of more than 1,000 values) whose standard deviation at initialisation differs by more
    than `tolerance` (relative) between the authors' model and the project's, by the authors' name."""
    project_params = dict(project.named_parameters())
    differing = {}
    for name, value in authors.named_parameters():
        mine = project_params[project_name(name)]
        a, p = float(value.std()), float(mine.std())
        if value.numel() > 1000 and abs(p - a) > tolerance * a:
            differing[name] = {"authors_std": a, "project_std": p}
    return differing


def window_gaps(runs: list[dict], side: str) -> dict:
    """Per window: the authors' and `side`'s means over seeds and the relative gap; held-out likewise."""
    def mean_of(who, key):
        values = [r[key] for r in runs if r["side"] == who]
        return [statistics.fmean(v) for v in zip(*values)] if isinstance(values[0], list) else statistics.fmean(values)

    authors, project = mean_of("authors", "window_loss"), mean_of(side, "window_loss")
    held_a, held_p = mean_of("authors", "held_out_loss"), mean_of(side, "held_out_loss")
    return {"authors": authors, "project": project, "relative": [p / a - 1 for a, p in zip(authors, project)],
            "held_out": {"authors": held_a, "project": held_p, "relative": held_p / held_a - 1}}


# ---- main -----------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors", type=Path, required=True, help="a fetched copy of ischlag/TP-Transformer")
    parser.add_argument("--mode", choices=["same", "own"], default="same")
    parser.add_argument("--archs", nargs="+", default=["tp_transformer", "transformer"], choices=sorted(PRESETS))
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES))
    parser.add_argument("--init", nargs="+", default=["authors"], choices=INITS,
                        help="mode own: the project's init schemes, each trained beside the authors' model")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--window", type=int, default=100, help="mode own: steps per reported loss window")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.995))
    parser.add_argument("--grad-clip", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--tolerance", type=float, default=1e-6, help="mode same: largest relative loss gap")
    parser.add_argument("--data", choices=["mathematics", "synthetic"], default="mathematics")
    parser.add_argument("--per-module", type=int, default=300, help="problems per module and difficulty")
    parser.add_argument("--held-out", type=int, default=2048, help="mode own: problems held out of training")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=REPO / "results/benchmarks/learning_data")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks/parity.json")
    args = parser.parse_args(argv)
    args.betas = tuple(args.betas)
    return args


def make_data(args) -> tuple[dict[int, list[Batch]], list[Batch], int, int]:
    """Training batches per seed, held-out batches, vocabulary size and pad id."""
    if args.data == "synthetic":
        vocab_size, pad_id = 24, 0
        batches = {s: synthetic_batches(args.steps, args.batch_size, vocab_size, pad_id, s) for s in args.seeds}
        return batches, synthetic_batches(4, args.batch_size, vocab_size, pad_id, 10_000), vocab_size, pad_id
    rows, vocab = mathematics_sample(args.per_module, 1, args.cache)
    random.Random(0).shuffle(rows)
    held, train = rows[: args.held_out], rows[args.held_out:]
    held_batches = [vocab.collate(held[i: i + args.batch_size]) for i in range(0, len(held), args.batch_size)]
    batches = {s: row_batches(train, vocab, args.batch_size, args.steps, s) for s in args.seeds}
    print(f"{len(train)} training and {len(held)} held-out problems, vocabulary {len(vocab)}", flush=True)
    return batches, held_batches, len(vocab), vocab.pad_id


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    batches, held_out, vocab_size, pad_id = make_data(args)
    sizes = {**resolve_model_config(PRESETS["transformer"]).__dict__, **SIZES[args.size]}
    sizes = {k: sizes[k] for k in ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers")}
    report = {"argv": sys.argv[1:] if argv is None else list(argv), "sizes": sizes, **stamp(), "results": []}
    for arch in args.archs:
        module = load_authors_module(args.authors, arch)
        if args.mode == "same":
            result = same_weights(arch, module, sizes, batches[args.seeds[0]], vocab_size, pad_id, args)
            verdict = ("agree" if result["first_step_over"] is None
                       else f"differ from step {result['first_step_over']}: {result.get('first_difference')}")
            print(f"{arch:<15} same weights, same batches, float64, {result['steps']} steps: largest relative loss "
                  f"gap {result['max_relative_gap']:.2e} (tolerance {args.tolerance:.0e}): {verdict}", flush=True)
        else:
            result = own_init(arch, module, sizes, batches, held_out, vocab_size, pad_id, args)
            for init, gap in result["gap"].items():
                print_gap_table(f"{arch}, project init {init}", gap, args.window, result["init_scales"][init])
        report["results"].append(result)
        write_report(args.out, report, indent=1)
    print(f"-> {args.out}")
    return report


def print_gap_table(title: str, gap: dict, window: int, scales: dict | None = None) -> None:
    n = len(gap["authors"])
    print(f"\n{title}: mean training loss per {window}-step window over seeds\n")
    print("| step | " + " | ".join(str(window * (i + 1)) for i in range(n)) + " | held-out |")
    print("|---|" + "---|" * (n + 1))
    held = gap["held_out"]
    print("| project | " + " | ".join(f"{v:.3f}" for v in gap["project"]) + f" | {held['project']:.4f} |")
    print("| authors | " + " | ".join(f"{v:.3f}" for v in gap["authors"]) + f" | {held['authors']:.4f} |")
    print("| gap | " + " | ".join(f"{v:+.1%}" for v in gap["relative"]) + f" | {held['relative']:+.1%} |")
    if scales is None:
        return
    print(f"\nstarting scales that differ: {len(scales)} parameters"
          + "".join(f"\n  {name}: std {s['project_std']:.4f} (authors {s['authors_std']:.4f})"
                    for name, s in list(scales.items())[:6]))


if __name__ == "__main__":
    main()
