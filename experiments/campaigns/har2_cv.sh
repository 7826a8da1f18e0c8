#!/usr/bin/env bash
# The HAR-2 accuracy campaign (issues #28, #29): 5-fold subject CV of the SiRNN levers beside
# Keras GRU / LSTM, three sweeps packed onto one machine (local worker processes, one thread
# each, JAX; a GPU is shared when there is one). Every finished trial lands in
# results/har2-campaign/ (commit it); run again anywhere to finish what is left.
#   bash experiments/campaigns/har2_cv.sh DATA [SLOTS_SIRNN SLOTS_GRU SLOTS_LSTM] [OUT]
set -u
. "$(dirname "$0")/common.sh"
data=${1:?usage: har2_cv.sh UCI_HAR_ZIP_OR_FOLDER [slots...] [out]}
s1=${2:-1} s2=${3:-1} s3=${4:-0} out=${5:-bench/sweeps/har2-campaign}
results=results/har2-campaign
common=(--task har2 --data-dir "$data" --folds 5 --epochs 40 --backend jax --engine processes
        --results "$results" ${DRY:+--dry-run})
rot='"augment": {"rotation": 15}'
qat="\"model_options\": {\"qat\": \"int8\"}, $QAT_STAGE"
baseline=("${KERAS_BASELINE[@]}")
python -m zoo.experiments.sweep cv "${common[@]}" --model sirnn --out "$out" --max-concurrent "$s1" \
  --variant base={} \
  --variant "rot15={$rot}" \
  --variant "rot15_qat={$rot, $qat, \"init_from\": \"variant:rot15\"}" \
  --variant "lean_rot15={$rot, \"model_options\": {\"premultiply\": false}}" \
  --variant "lean_rot15_qat={$rot, \"model_options\": {\"premultiply\": false, \"qat\": \"int8\"}, $QAT_STAGE, \"init_from\": \"variant:lean_rot15\"}" \
  --variant "rot10={\"augment\": {\"rotation\": 10}}" \
  --variant "rot25={\"augment\": {\"rotation\": 25}}" \
  --variant "lean_r8_rot15={$rot, \"model_options\": {\"premultiply\": false, \"rank\": 8}}" &
python -m zoo.experiments.sweep cv "${common[@]}" --model gru "${baseline[@]}" --out "$out" \
  --max-concurrent "$s2" --variant base={} --variant "rot15={$rot}" &
if [ "$s3" -gt 0 ]; then
  python -m zoo.experiments.sweep cv "${common[@]}" --model lstm "${baseline[@]}" --out "$out" \
    --max-concurrent "$s3" --variant base={} --variant "rot15={$rot}" &
fi
wait
