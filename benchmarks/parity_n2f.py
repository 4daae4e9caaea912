"""Parity with the TP-N2F authors' model file: same weights and batches give the same losses.

Loads `src/model.py` from a fetched copy of the authors' repository (ckzbullbullet/TP-N2F), unmodified,
beside the project's tp_n2f, and trains both with the authors' training step (their run_tpn2f_lisp.py: the
relation's and each argument's cross entropy, `<pad>` weighted 0, summed; Adam; no clipping) on identical
AlgoLisp batches from the project's generator (3 arguments per tuple).

- `--mode same` (the parity check): the project's model in the authors' code's variant (`variant:
  authors_code`) takes the authors' freshly initialised weights (`map_weights`); both run in float64 on
  batches without padding (each batch cut to its shortest question and program), and the per-step losses
  must agree to `--tolerance` (relative). When they do not, the first probed module output, then the first
  gradient, then the first parameter after one Adam step that differs is named.
- `--mode own`: each side from its own start under the same seed, on the same padded batches in float32: the
  authors' model reads the padding as their scripts do (they pad every problem to 128 positions and mask
  nothing; here to the batch's longest), the project's skips it. Per seed the mean training loss per
  window and a held-out loss; the project's gap to the authors' mean per window, for each `--project`
  configuration (`variant:init`).

    python -m benchmarks.parity_n2f --authors ../TP-N2F                                   # same weights, tiny
    python -m benchmarks.parity_n2f --authors ../TP-N2F --size paper --steps 5            # AlgoLisp preset
    python -m benchmarks.parity_n2f --authors ../TP-N2F --mode own --steps 1200 --seeds 1 2 3

Prints a table and writes JSON (`--out`).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from tprepro.data.batching import Batch
from tprepro.data.tuple_ids import ARG_PAD, REL_PAD
from tprepro.models.registry import build_model, resolve_model_config

from benchmarks.kit.report import stamp, write_report
from benchmarks.kit.sample import REPO
from benchmarks.parity import print_gap_table, relative_difference, row_batches, window_gaps
PRESETS = {"tiny": "tp_n2f_tiny", "paper": "tp_n2f_algolisp"}
ARITY = 3  # AlgoLisp


# ---- the two models -----------------------------------------------------------------------------
def load_authors_module(repo: Path):
    path = Path(repo) / "src/model.py"
    if not path.is_file():
        raise SystemExit(f"--authors: {path} not found (a fetched copy of ckzbullbullet/TP-N2F)")
    spec = importlib.util.spec_from_file_location("authors_tp_n2f", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def project_config(size: str, variant: str, init: str):
    return resolve_model_config(PRESETS[size], {"tuple_arity": ARITY, "variant": variant, "init": init,
                                                "dropout": 0.0})


def build_authors(module, size: str, vocab) -> nn.Module:
    """Their TPN2F with their argument names, at the project preset's sizes (their `dot` attention)."""
    cfg = project_config(size, "authors_code", "authors")
    n2f = cfg.family
    return module.TPN2F(src_emb_dim=cfg.d_model, trg_emb_dim=n2f.d_tuple_embedding, src_vocab_size=len(vocab.words),
                        opt_vocab_size=len(vocab.relations), arg_vocab_size=len(vocab.arguments),
                        pad_token_src=vocab.pad_id, pad_token_opt=REL_PAD, pad_token_arg=ARG_PAD,
                        attention_mode="dot", nSymbols=n2f.n_fillers, nRoles=cfg.n_roles, dSymbols=n2f.d_filler,
                        dRoles=cfg.d_role, temperature=n2f.selection_temperature, dOpts=n2f.d_relation,
                        dArgs=n2f.d_argument, dPoss=n2f.d_position, binary=ARITY == 2)


def build_project(size: str, variant: str, init: str, vocab) -> nn.Module:
    return build_model(project_config(size, variant, init), **vocab.model_sizes())


# ---- weights: the authors' names -> the project's ------------------------------------------------
_NAMES = {
    "src_embedding": "encoder.embedding", "opt_embedding": "decoder.relation_embedding",
    "arg_embedding": "decoder.argument_embedding",
    "encoder.WaF": "encoder.filler_selection.scores", "encoder.WaR": "encoder.role_selection.scores",
    "encoder.rnn_aF": "encoder.filler_lstm", "encoder.rnn_aR": "encoder.role_lstm",
    "decoder.rnn_T.input_weights": "decoder.cell", "decoder.rnn_T.hidden_weights": "decoder.cell",
    "decoder.rnn_T.attention_layer.linear_in": "decoder.attention.query_projection",
    "decoder.rnn_T.attention_layer.linear_out": "decoder.attention.combine",
    "decoder.O_plus": "decoder.readout.unbinding.relation_dual",
    "encoder2decoder": "reasoning.layers.0", "encoder2decoderCtx": "decoder.attention.memory_projection",
    "decoder2opt": "decoder.readout.relation_head", "decoder2arg": "decoder.readout.argument_head",
}
_DICTIONARIES = {"encoder.F": "encoder.filler_selection", "encoder.R": "encoder.role_selection"}
_LSTM_TENSORS = {"weight_ih_l0": "weight_ih", "weight_hh_l0": "weight_hh", "bias_ih_l0": "bias_ih",
                 "bias_hh_l0": "bias_hh"}


def project_slot(name: str) -> tuple[str, int | None]:
    """(the project's parameter, the row of it) holding the authors' parameter `name`."""
    module, _, tensor = name.rpartition(".")
    if module == "decoder" and tensor.startswith("ur"):  # their positional unbinding vectors ur1..urK
        return "decoder.readout.unbinding.position_duals", int(tensor[2:]) - 1
    if module in _DICTIONARIES:  # their nn.Linear(n, d): weight [d, n] is the dictionary, plus a bias
        return f"{_DICTIONARIES[module]}.{'dictionary' if tensor == 'weight' else 'dictionary_bias'}", None
    if module not in _NAMES:
        raise KeyError(f"authors' parameter {name} has no counterpart")
    if module.endswith(("rnn_aF", "rnn_aR")):
        tensor = _LSTM_TENSORS[tensor]
    elif module.endswith(("input_weights", "hidden_weights")):  # their LSTM cell's two linears
        tensor = f"{tensor}_{'ih' if module.endswith('input_weights') else 'hh'}"
    return f"{_NAMES[module]}.{tensor}", None


def as_project(name: str, value: torch.Tensor) -> torch.Tensor:
    """The authors' tensor laid out as the project's: their attention combines [context; h], ours [h; context]."""
    if name == "decoder.rnn_T.attention_layer.linear_out.weight":
        half = value.size(1) // 2
        return torch.cat([value[:, half:], value[:, :half]], dim=1)
    return value


def paired(authors: nn.Module, project: nn.Module, what=lambda p: p):
    """(authors' name, their tensor in the project's layout, the project's matching tensor) for every
    parameter; `what` picks the tensor of a parameter (itself, or its .grad)."""
    mine = dict(project.named_parameters())
    for name, param in authors.named_parameters():
        target, row = project_slot(name)
        theirs = as_project(name, what(param))
        ours = what(mine[target])
        yield name, theirs, (ours if row is None else ours[row])


def map_weights(authors: nn.Module, project: nn.Module) -> None:
    """Copy every authors' parameter into the project's model; fails on a parameter either side leaves unmapped."""
    seen = set()
    with torch.no_grad():
        for name, theirs, ours in paired(authors, project):
            ours.copy_(theirs)
            seen.add(project_slot(name)[0])
    missing = sorted(set(dict(project.named_parameters())) - seen)
    if missing:
        raise KeyError(f"project parameters without an authors' counterpart: {', '.join(missing)}")


def init_scale_differences(authors: nn.Module, project: nn.Module, tolerance: float = 0.1) -> dict[str, dict]:
    """Parameters (of more than 100 values) whose standard deviation at the start differs by more than
    `tolerance` (relative) between two independently initialised models, by the authors' name."""
    differing = {}
    for name, theirs, ours in paired(authors, project):
        a, p = float(theirs.std()), float(ours.std())
        if theirs.numel() > 100 and abs(p - a) > tolerance * a:
            differing[name] = {"authors_std": a, "project_std": p}
    return differing


# ---- losses: each side's own ---------------------------------------------------------------------
def authors_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """run_tpn2f_lisp.py: per slot, cross entropy with the <pad> class weighted 0 (mean over the slot's
    non-pad targets); the relation's and the arguments' summed."""
    logits = model(batch.src, batch.tgt_in)[: 1 + ARITY]  # relation [B, T, n_rel], then each argument slot
    loss = 0.0
    for slot, scores in enumerate(logits):
        weight = torch.ones(scores.size(-1), dtype=scores.dtype)
        weight[REL_PAD if slot == 0 else ARG_PAD] = 0.0
        loss = loss + F.cross_entropy(scores.reshape(-1, scores.size(-1)), batch.tgt_out[..., slot].reshape(-1),
                                      weight=weight)
    return loss


def project_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    return model.target_loss(model(batch.src, batch.tgt_in), batch.tgt_out)


def train_losses(model: nn.Module, loss_fn, batches: list[Batch], lr: float) -> list[float]:
    """Their step on each batch in turn: loss, backward, Adam (default betas, no clipping). Per-step losses."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for batch in batches:
        loss = loss_fn(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def held_out_loss(model: nn.Module, loss_fn, batches: list[Batch]) -> float:
    """Mean loss per real target tuple over `batches`."""
    model.eval()
    total = tuples = 0.0
    for batch in batches:
        n = int((batch.tgt_out[..., 0] != REL_PAD).sum())
        total += float(loss_fn(model, batch)) * n
        tuples += n
    model.train()
    return total / tuples


# ---- diagnosis --------------------------------------------------------------------------------------
# Modules whose outputs hold the same numbers in the same order on both sides (flattened).
PROBES = [("src_embedding", "encoder.embedding"), ("encoder2decoderCtx", "decoder.attention.memory_projection"),
          ("encoder2decoder", "reasoning.layers.0"), ("decoder.O_plus", "decoder.readout.unbinding.relation_dual"),
          ("decoder2opt", "decoder.readout.relation_head")]


def first_difference(authors: nn.Module, project: nn.Module, batch: Batch, lr: float, tolerance: float) -> dict | None:
    """From equal weights on one batch: the first probed output, gradient or one-step update that differs."""
    outputs: dict[str, torch.Tensor] = {}

    def keep(key: str):
        def hook(_module, _inputs, output) -> None:  # returns None: the module's output stays as it is
            outputs.setdefault(key, output.detach().reshape(-1))  # the first call's
        return hook

    handles = []
    for side, model in (("authors", authors), ("project", project)):
        modules = dict(model.named_modules())
        for a_name, p_name in PROBES:
            handles.append(modules[a_name if side == "authors" else p_name].register_forward_hook(keep(f"{side}:{a_name}")))
    a_loss, p_loss = authors_loss(authors, batch), project_loss(project, batch)
    for handle in handles:
        handle.remove()
    for a_name, p_name in PROBES:
        diff = relative_difference(outputs[f"project:{a_name}"], outputs[f"authors:{a_name}"])
        if diff > tolerance:
            return {"what": "output", "module": a_name, "project": p_name, "relative_difference": diff}
    if relative_difference(p_loss, a_loss) > tolerance:
        return {"what": "loss", "authors": float(a_loss), "project": float(p_loss)}
    a_loss.backward(), p_loss.backward()
    for name, theirs, ours in paired(authors, project, lambda p: p.grad):
        diff = relative_difference(ours, theirs)
        if diff > tolerance:
            return {"what": "gradient", "parameter": name, "relative_difference": diff}
    for model in (authors, project):
        torch.optim.Adam(model.parameters(), lr=lr).step()
    for name, theirs, ours in paired(authors, project, lambda p: p.detach()):
        diff = relative_difference(ours, theirs)
        if diff > tolerance:
            return {"what": "update", "parameter": name, "relative_difference": diff}
    return None


# ---- data -----------------------------------------------------------------------------------------
def algolisp_rows(n: int, seed: int) -> list[tuple[str, str]]:
    """(question, program) pairs from the project's AlgoLisp generator (the n2f data stage's)."""
    from tprepro.experiments.n2f.algolisp import generator, release

    rows = [release.record_to_row(record, "train", i) for i, record in enumerate(generator.generate(n, seed))]
    return [(row["question"], row["answer"]) for row in rows]


def without_padding(batch: Batch) -> Batch:
    """The batch cut to its shortest question and program: every position real on both sides."""
    words = int((batch.src != 0).sum(1).min())
    tuples = int((batch.tgt_out[..., 0] != REL_PAD).sum(1).min())
    tgt_out = batch.tgt_out[:, :tuples]
    return Batch(batch.src[:, :words], batch.tgt_in[:, :tuples], tgt_out, int(tgt_out[..., 0].numel()))


# ---- the two modes --------------------------------------------------------------------------------
def pair(module, size: str, vocab, seed: int, dtype: torch.dtype) -> tuple[nn.Module, nn.Module]:
    """The authors' model under `seed` and the project's (authors_code variant) holding its weights."""
    torch.manual_seed(seed)
    authors = build_authors(module, size, vocab).to(dtype)
    project = build_project(size, "authors_code", "authors", vocab).to(dtype)
    map_weights(authors, project)
    return authors, project


def same_weights(module, vocab, batches: list[Batch], args) -> dict:
    torch.set_default_dtype(torch.float64)
    try:
        batches = [without_padding(b) for b in batches]
        authors, project = pair(module, args.size, vocab, args.seeds[0], torch.float64)
        a = train_losses(authors, authors_loss, batches, args.lr)
        p = train_losses(project, project_loss, batches, args.lr)
        gaps = [abs(x - y) / abs(x) for x, y in zip(a, p)]
        result = {"arch": "tp_n2f", "mode": "same", "steps": len(batches), "authors_loss": a, "project_loss": p,
                  "max_relative_gap": max(gaps),
                  "first_step_over": next((i + 1 for i, g in enumerate(gaps) if g > args.tolerance), None)}
        if result["first_step_over"] is not None:
            authors, project = pair(module, args.size, vocab, args.seeds[0], torch.float64)
            result["first_difference"] = first_difference(authors, project, batches[0], args.lr, args.tolerance)
        return result
    finally:
        torch.set_default_dtype(torch.float32)


def own_starts(module, vocab, batches: dict[int, list[Batch]], held_out: list[Batch], args) -> dict:
    runs = []
    for seed in args.seeds:
        for side in ["authors", *(f"project:{spec}" for spec in args.project)]:
            torch.manual_seed(seed)
            if side == "authors":
                model, loss_fn = build_authors(module, args.size, vocab), authors_loss
            else:
                variant, init = side.split(":")[1:]
                model, loss_fn = build_project(args.size, variant, init, vocab), project_loss
            started = time.perf_counter()
            losses = train_losses(model, loss_fn, batches[seed], args.lr)
            windows = [statistics.fmean(losses[i: i + args.window]) for i in range(0, len(losses), args.window)]
            runs.append({"seed": seed, "side": side, "window_loss": windows,
                         "held_out_loss": held_out_loss(model, loss_fn, held_out),
                         "seconds": time.perf_counter() - started})
            print(f"tp_n2f seed {seed} {side:<28} " + " ".join(f"{w:.3f}" for w in windows)
                  + f" | held-out {runs[-1]['held_out_loss']:.4f} ({runs[-1]['seconds']:.0f} s)", flush=True)
    return {"arch": "tp_n2f", "mode": "own", "runs": runs,
            "gap": {spec: window_gaps(runs, f"project:{spec}") for spec in args.project}}


# ---- main -----------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors", type=Path, required=True, help="a fetched copy of ckzbullbullet/TP-N2F")
    parser.add_argument("--mode", choices=["same", "own"], default="same")
    parser.add_argument("--size", default="tiny", choices=sorted(PRESETS))
    parser.add_argument("--project", nargs="+", default=["authors_code:authors", "paper:pytorch"],
                        help="mode own: the project's `variant:init` configurations, each beside the authors'")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--window", type=int, default=100, help="mode own: steps per reported loss window")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1.15e-3, help="the paper's AlgoLisp rate")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--tolerance", type=float, default=1e-9, help="mode same: largest relative loss gap")
    parser.add_argument("--problems", type=int, default=3000, help="generated AlgoLisp problems (params.yaml's)")
    parser.add_argument("--held-out", type=int, default=400, help="mode own: problems held out of training")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks/parity-n2f.json")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    from tprepro.experiments.n2f.tuple_vocab import build_tuple_vocab

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message="Implicit dimension choice")  # their nn.Softmax() and F.softmax
    rows = algolisp_rows(args.problems + args.held_out, seed=1)
    held, train = rows[: args.held_out], rows[args.held_out:]
    vocab = build_tuple_vocab(train, ARITY)
    batches = {s: row_batches(train, vocab, args.batch_size, args.steps, s) for s in args.seeds}
    held_out = [vocab.collate(held[i: i + args.batch_size]) for i in range(0, len(held), args.batch_size)]
    print(f"{len(train)} training and {len(held)} held-out AlgoLisp problems; {len(vocab.words)} words, "
          f"{len(vocab.relations)} relations, {len(vocab.arguments)} arguments", flush=True)
    module = load_authors_module(args.authors)
    if args.mode == "same":
        result = same_weights(module, vocab, batches[args.seeds[0]], args)
        verdict = ("agree" if result["first_step_over"] is None
                   else f"differ from step {result['first_step_over']}: {result.get('first_difference')}")
        print(f"tp_n2f ({PRESETS[args.size]}) same weights, same batches, float64, {result['steps']} steps: largest "
              f"relative loss gap {result['max_relative_gap']:.2e} (tolerance {args.tolerance:.0e}): {verdict}")
    else:
        result = own_starts(module, vocab, batches, held_out, args)
        for spec, gap in result["gap"].items():
            print_gap_table(f"tp_n2f ({PRESETS[args.size]}), project {spec}", gap, args.window)
    report = {"argv": sys.argv[1:] if argv is None else list(argv), "size": PRESETS[args.size], **stamp(),
              "results": [result]}
    write_report(args.out, report, indent=1)
    print(f"-> {args.out}")
    return report


if __name__ == "__main__":
    main()
