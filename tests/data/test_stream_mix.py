"""The training stream mixes modules in proportion to their sizes from the first batches on.

Twelve modules of different sizes and question lengths, one dataset directory each (as the
pipeline has one per (split, module)), streamed in either batch order. Over each of
four consecutive windows of the first 128 batches (under an epoch), the rows per module are
tested against the module sizes with Pearson's chi-square (11 degrees of freedom): the
stream passes when p > 0.001 in every window, at one shard per module and at many (the
critical chi-square is 31.3). The stream before issue 9, which read 8 shards at a time,
measured 85 to 518 here. A window holds whole pools (two of 16 batches): inside a pool the
batches are sorted by length, and here length names the module. Run with -s to see the statistics.
"""

import pytest
from scipy.stats import chisquare

from tprepro.data.batching import BatchStream
from tprepro.data.shards import open_dataset
from tprepro.data.vocab import build_vocab

from helpers import arithmetic_rows, write_dataset

SIZES = [150 + 75 * i for i in range(12)]  # 150 ... 975 rows: 6,750 in all
BATCH, BATCHES, WINDOWS, POOL = 32, 128, 4, 16


def module_rows(index: int, size: int) -> list[dict]:
    """`size` problems whose questions name their module (and so differ in length by module)."""
    module = f"m{index:02d}" + "x" * (index % 4) * 5
    rows = arithmetic_rows(size, seed=index, module=module)
    for i, row in enumerate(rows):
        row["question"] = f"[{module}] #{i} {row['question']}"
    return rows


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    root = tmp_path_factory.mktemp("mix")
    rows = [module_rows(i, n) for i, n in enumerate(SIZES)]
    return root, rows


@pytest.mark.parametrize("batching", ["pool", "buckets"])
@pytest.mark.parametrize("rows_per_shard", [None, 25], ids=["one-shard-per-module", "many-shards-per-module"])
def test_every_window_of_batches_mixes_modules_by_size(modules, rows_per_shard, batching):
    root, rows = modules
    datasets = [open_dataset(write_dataset(root / f"r{rows_per_shard}" / r[0]["module"], r,
                                           rows_per_shard=rows_per_shard or len(r))) for r in rows]
    module_of = {row["question"]: row["module"] for r in rows for row in r}
    names = [r[0]["module"] for r in rows]
    stream = BatchStream([ds.files for ds in datasets], build_vocab(datasets), BATCH, bucket_width=8, seed=1,
                         shuffle_buffer=256, read_rows=64, batching=batching, pool_batches=POOL)

    total = sum(SIZES)
    statistics = []
    for _ in range(WINDOWS):
        counts = dict.fromkeys(names, 0)
        for _ in range(BATCHES // WINDOWS):
            for question, _ in stream.next_rows():
                counts[module_of[question]] += 1
        observed = [counts[n] for n in names]
        expected = [sum(observed) * size / total for size in SIZES]
        result = chisquare(observed, expected)
        statistics.append((result.statistic, result.pvalue))
        assert min(observed) > 0
        assert result.pvalue > 1e-3, f"modules not mixed by size: chi2={result.statistic:.1f}, counts {observed}"
    assert stream.epoch == 0  # all four windows inside the first epoch
    print(f"\n{batching}, {rows_per_shard or 'one'} rows per shard: chi2 (df 11) per window "
          + ", ".join(f"{s:.1f} (p={p:.2f})" for s, p in statistics))
