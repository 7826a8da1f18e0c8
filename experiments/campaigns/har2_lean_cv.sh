#!/usr/bin/env bash
# The HAR-2 frontier campaign (issues #28, #29): 5-fold subject CV of the lean SiRNN graphs that
# meet the device goal (<= 12,000 Cortex-M4 instructions per step, <= 6 KB flash; see
# docs/frontier.md), each trained float with rotation 15 and then fine-tuned with whole-step
# QAT, beside Keras GRU / LSTM trained with the same rotation (the fair baselines); round 2 adds
# rotation 35.
# Every finished trial lands in results/har2-campaign/ (commit it); run again
# anywhere to finish what is left (finished trials are skipped).
#   bash experiments/campaigns/har2_lean_cv.sh DATA [SLOTS_LEAN] [SLOTS_BASELINES] [OUT]
# SLOTS_BASELINES 0 skips the GRU / LSTM sweep. BASELINE_PLATFORM=cuda runs that sweep on a
# GPU (JAX) while the lean sweep keeps the CPU cores.
set -u
. "$(dirname "$0")/common.sh"
data=${1:?usage: har2_lean_cv.sh UCI_HAR_ZIP_OR_FOLDER [slots_lean] [slots_baselines] [out]}
s1=${2:-2} s2=${3:-0} out=${4:-bench/sweeps/har2-lean}
results=results/har2-campaign
common=(--task har2 --data-dir "$data" --folds 5 --backend jax --engine processes
        --results "$results" ${DRY:+--dry-run})
variants=()
add_lean() {  # NAME RANK UNITS ROTATION SUFFIX: the float variant and its QAT stage
  local opts="\"premultiply\": false, \"rank\": $2, \"units\": $3"
  local aug="\"augment\": {\"rotation\": $4}" name="l_$1$5"
  variants+=(--variant "$name={$aug, \"model_options\": {$opts}}")
  variants+=(--variant "${name}_qat={$aug, \"model_options\": {$opts, \"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:$name\"}")
}
for graph in "r16_u48 16 48" "r4_u80 4 80" "r8_u80 8 80" "r16_u64 16 64"; do
  read -r name rank units <<<"$graph"
  add_lean "$name" "$rank" "$units" 15 ""
done
# Round 2 (session 11): the two lean graphs nearest the device goal with rotation 35, the angle
# that won on the premultiplied graph (har2_levers_cv.sh), and their QAT stages.
add_lean r16_u64 16 64 35 _rot35
add_lean r8_u80 8 80 35 _rot35
JAX_PLATFORMS=${LEAN_PLATFORM:-cpu} python -m zoo.experiments.sweep cv "${common[@]}" --model sirnn --out "$out" \
  --epochs 30 --max-concurrent "$s1" "${variants[@]}" &
if [ "$s2" -gt 0 ]; then
  baseline=("${KERAS_BASELINE[@]}" --epochs 30 --max-concurrent "$s2" --out "$out-baselines")
  rot='"augment": {"rotation": 15}'
  ( export JAX_PLATFORMS=${BASELINE_PLATFORM:-cpu}
    python -m zoo.experiments.sweep cv "${common[@]}" --model gru "${baseline[@]}" --variant "rot15={$rot}"
    python -m zoo.experiments.sweep cv "${common[@]}" --model lstm "${baseline[@]}" --variant "rot15={$rot}"
  ) &
fi
wait
