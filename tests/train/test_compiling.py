"""train/compiling.py: one compiled graph for every batch length, counted on CPU.

Dynamo's own graph count under torch.compile(backend="eager") (no C++ toolchain needed) over the real
batch stream the trainer uses: pools of length-sorted batches, every batch its own padded lengths.
"""

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from tprepro.data.batching import BatchStream
from tprepro.data.packing import pack
from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.experiments.mathematics.data_stage import run_data_stage
from tprepro.models.registry import build_model, resolve_model_config
from tprepro.train.compiling import compile_cache_dir, compile_model, mark_dynamic_lengths
from tprepro.train.step import optimizer_step

from training_kit import SMALL

STEPS = 40
MODULES = ("algebra__linear_1d", "numbers__place_value", "arithmetic__add_or_sub")
DATA = {"source": "generate", "release_root": None, "seed": 1, "train_per_module": 80, "test_per_module": 1,
        "rows_per_shard": 40}


@pytest.fixture(scope="module")
def data(generate_python, tmp_path_factory):
    """Three modules of the real generator: questions and answers of many lengths."""
    root = tmp_path_factory.mktemp("compiling")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
        for module in MODULES:
            run_data_stage("train-easy", module, root / module, DATA)
    datasets = [open_dataset(root / module) for module in MODULES]
    return [d.files for d in datasets], build_vocab(datasets)


def graphs_over_the_stream(data, preset: str, mark: bool, packing: bool = False) -> tuple[int, int]:
    """(graphs Dynamo compiled, distinct (rows, source, target) shapes) over STEPS steps of the stream."""
    files, vocab = data
    torch._dynamo.reset()
    counters.clear()
    model = build_model(resolve_model_config(preset, {**SMALL, "dropout": 0.0}), **vocab.model_sizes())
    net = compile_model(model, cache_dir=None, backend="eager")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    stream = iter(BatchStream(files, vocab, batch_size=8, bucket_width=8, seed=3, shuffle_buffer=32,
                              read_rows=16, pool_batches=1, collate=(lambda rows: pack(rows, vocab)) if packing else None))
    shapes = set()
    for _ in range(STEPS):
        batch = next(stream)
        shapes.add((batch.src.shape[0], batch.src.shape[1], batch.tgt_in.shape[1]))
        optimizer_step(net, optimizer, mark_dynamic_lengths(batch) if mark else batch, vocab.pad_id, 0.1)
    return counters["stats"]["unique_graphs"], len(shapes)


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny", "ut_tiny"])
def test_marked_lengths_compile_once_for_every_batch_shape(data, preset):
    graphs, shapes = graphs_over_the_stream(data, preset, mark=True)
    assert shapes > 20  # random batches: many padded lengths
    assert graphs == 1


@pytest.mark.parametrize("preset", ["transformer_tiny", "tp_transformer_tiny"])
def test_packed_batches_compile_once_for_every_row_count_and_width(data, preset):
    """Packed rows (data/packing.py) vary in number as well as width: both are marked."""
    graphs, shapes = graphs_over_the_stream(data, preset, mark=True, packing=True)
    assert shapes > 20  # row counts and widths vary from batch to batch
    assert graphs == 1


def test_unmarked_lengths_recompile_when_the_shape_first_changes(data):
    """What the marking saves: Dynamo compiles the first shape statically, then once more as dynamic."""
    graphs, _ = graphs_over_the_stream(data, "transformer_tiny", mark=False)
    assert graphs == 2


def test_the_compile_cache_lives_beside_the_checkpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    checkpoint = tmp_path / "checkpoints" / "tp_transformer-s1" / "checkpoint.pt"
    compile_model(torch.nn.Linear(2, 2), compile_cache_dir(checkpoint), backend="eager")
    import os
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(checkpoint.parent / "compile-cache")
    assert (checkpoint.parent / "compile-cache").is_dir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))  # a user's own choice is kept
    compile_model(torch.nn.Linear(2, 2), tmp_path / "other", backend="eager")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
