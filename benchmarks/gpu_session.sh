#!/usr/bin/env bash
# The GPU check of the paper configuration in one device call (about 9 minutes on one H100 at STEPS=100, 2026-11-28:
# 2.5 min per paper model, 2.5 min for the `gpu` tests):
# benchmarks.train_speed on the two paper models at batch 1024 (with a requeued process's first step),
# the paper TP-Transformer again on random batches packed into rows (train.packing), the two-variable UT,
# then the `gpu` tests. Everything it writes lands under $OUT (the device's
# returned folder) or results/benchmarks/gpu-session/.
#
# Before the call, here (the device has torch, pandas, pyarrow and pytest, but neither jsonschema nor the
# Mathematics generator):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
#   python -m benchmarks.learning --steps 0   (generates the sample of every module, results/benchmarks/learning_data/n300-r100-s1;
#   DRY=1 reads two modules only, so it does not check this: the first device call of 2026-11-28 stopped there)
# and carry [".whl", "results/benchmarks/learning_data"]. On a machine without CUDA, DRY=1 runs the same
# steps at the tiny size (the check before spending device time).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/benchmarks/gpu-session}
mkdir -p "$OUT"
if ! python3 -c "import jsonschema" 2>/dev/null && compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" | tee "$OUT/device.txt"

if [ "${DRY:-0}" = 1 ]; then
  size=(--params params.yaml --batch-size 16 --steps 20 --window 10 --modules algebra__linear_1d numbers__place_value)
  math=(--presets transformer_tiny tp_transformer_tiny); packed=(--presets tp_transformer_tiny); two=(--presets ut_tiny)
else
  size=(--steps "${STEPS:-150}" --window 25)
  math=(); packed=(--presets tp_transformer_paper); two=()
fi
failed=0  # each step runs whatever the one before did: device time is too scarce to lose the rest to one failure
step() { "$@" 2>&1 | tee -a "$OUT/train_speed.log" || { echo "FAILED: $*" | tee -a "$OUT/train_speed.log"; failed=1; }; }
step python3 -m benchmarks.train_speed "${size[@]}" "${math[@]}" --requeue --out-dir "$OUT"
step python3 -m benchmarks.train_speed "${size[@]}" "${packed[@]}" --pool-batches 1 --packing --out-dir "$OUT"
step python3 -m benchmarks.train_speed "${size[@]}" --experiment two_variable "${two[@]}" --out-dir "$OUT"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/train/test_gpu.py 2>&1 | tee "$OUT/gpu_tests.log" || failed=1
exit $failed
