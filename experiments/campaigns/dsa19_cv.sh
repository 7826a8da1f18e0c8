#!/usr/bin/env bash
# The DSA-19 campaign (issue #29): 4-fold subject CV (the 4 training subjects p1-p4, one held out
# per fold) of the shipped dsa19-sirnn recipe with and without rotation augmentation (each of the
# five sensor units turned by its own random rotation), 30 epochs, its QAT fine-tune, and Keras GRU
# with the same levers (BASELINES=0 skips it); round 3 adds rotation 35 and 45 and their QAT
# stages; round 4 the GRU at rotation 45 and its QAT stage, the lean graph at rotation 45 and 60,
# and the Keras LSTM at rotation 45; round 5 the baselines at rotation 60 (the lean graph's best
# angle, so the comparison is like for like) and the lean graph at 75 / 90, wider and of rank 32;
# round 6 mixup on the shipped lean recipe; round 7 its QAT stage at the 98th percentile.
# Every finished trial lands in results/dsa19-campaign/ (commit it); run again
# anywhere to finish what is left.
#   bash experiments/campaigns/dsa19_cv.sh DATA [SLOTS] [OUT]
set -u
. "$(dirname "$0")/common.sh"
data=${1:?usage: dsa19_cv.sh DSA19_ZIP_OR_FOLDER [slots] [out]}
slots=${2:-2} out=${3:-bench/sweeps/dsa19-campaign}
lean=()
add_lean() {  # RANK UNITS ROTATION: the lean float variant l_r<RANK>_u<UNITS>_rot<ROT> and its QAT stage
  local opts="\"premultiply\": false, \"rank\": $1, \"units\": $2"
  local aug="\"augment\": {\"rotation\": $3}" name="l_r$1_u$2_rot$3"
  lean+=(--variant "$name={$aug, \"model_options\": {$opts}}")
  lean+=(--variant "${name}_qat={$aug, \"model_options\": {$opts, \"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:$name\"}")
}
add_lean 16 80 45
add_lean 16 80 60
# Round 5 (session 12): the angle past 60, and the lean graph wider (units 128) or of rank 32 at 60
# (both inside the 16 KB budget).
add_lean 16 80 75
add_lean 16 80 90
add_lean 16 128 60
add_lean 32 80 60
# Round 6 (session 14): mixup 0.2 (augment mixup) on the shipped lean recipe (rotation 60), its
# QAT stage without it (as the KWS recipe's).
opts='"premultiply": false, "rank": 16, "units": 80'
lean+=(--variant "l_r16_u80_rot60_mix02={\"augment\": {\"rotation\": 60, \"mixup\": 0.2}, \"model_options\": {$opts}}")
lean+=(--variant "l_r16_u80_rot60_mix02_qat={\"augment\": {\"rotation\": 60}, \"model_options\": {$opts, \"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:l_r16_u80_rot60_mix02\"}")
# Round 7 (session 15): the shipped lean recipe's QAT stage with its ranges at the 98th percentile
# of each tensor (qat_percentile; the stages so far: 99.99), HAR-2's int8 lever (docs/realscale.md §15).
lean+=(--variant "l_r16_u80_rot60_qat_p98={\"augment\": {\"rotation\": 60}, \"model_options\": {$opts, \"qat\": \"int8\",
    \"qat_percentile\": 98.0}, $QAT_STAGE, \"init_from\": \"variant:l_r16_u80_rot60\"}")
python -m zoo.experiments.sweep cv --task dsa19 --model sirnn --data-dir "$data" --folds 4 --epochs 30 \
  --backend jax --engine processes --results results/dsa19-campaign --out "$out" \
  --max-concurrent "$slots" ${DRY:+--dry-run} \
  --variant "base_e30={}" \
  --variant "rot25_e30={\"augment\": {\"rotation\": 25}}" \
  --variant "rot25_qat={\"augment\": {\"rotation\": 25}, \"model_options\": {\"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:rot25_e30\"}" \
  --variant "rot15_e30={\"augment\": {\"rotation\": 15}}" \
  --variant "l_r16_u80_rot25={\"augment\": {\"rotation\": 25}, \"model_options\": {\"premultiply\": false}}" \
  --variant "l_r16_u80_rot25_qat={\"augment\": {\"rotation\": 25}, \"model_options\": {\"premultiply\": false,
    \"qat\": \"int8\"}, $QAT_STAGE, \"init_from\": \"variant:l_r16_u80_rot25\"}" \
  --variant "rot35_e30={\"augment\": {\"rotation\": 35}}" \
  --variant "rot45_e30={\"augment\": {\"rotation\": 45}}" \
  --variant "rot35_qat={\"augment\": {\"rotation\": 35}, \"model_options\": {\"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
  --variant "rot45_qat={\"augment\": {\"rotation\": 45}, \"model_options\": {\"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:rot45_e30\"}" \
  "${lean[@]}" &
if [ "${BASELINES:-1}" -gt 0 ]; then  # Keras GRU / LSTM at the HAR-2 baselines' settings, same levers
  python -m zoo.experiments.sweep cv --task dsa19 --model gru --data-dir "$data" --folds 4 --epochs 30 \
    --backend jax --engine processes --results results/dsa19-campaign \
    --out "$out-baselines" --max-concurrent 1 ${DRY:+--dry-run} "${KERAS_BASELINE[@]}" \
    --variant "base_e30={}" --variant "rot25_e30={\"augment\": {\"rotation\": 25}}" \
    --variant "rot45_e30={\"augment\": {\"rotation\": 45}}" \
    --variant "rot45_qat={\"augment\": {\"rotation\": 45}, \"model_options\": {\"qat\": \"int8\"},
      $QAT_STAGE, \"init_from\": \"variant:rot45_e30\"}" \
    --variant "rot60_e30={\"augment\": {\"rotation\": 60}}" \
    --variant "rot60_qat={\"augment\": {\"rotation\": 60}, \"model_options\": {\"qat\": \"int8\"},
      $QAT_STAGE, \"init_from\": \"variant:rot60_e30\"}"
  python -m zoo.experiments.sweep cv --task dsa19 --model lstm --data-dir "$data" --folds 4 --epochs 30 \
    --backend jax --engine processes --results results/dsa19-campaign \
    --out "$out-baselines" --max-concurrent 1 ${DRY:+--dry-run} "${KERAS_BASELINE[@]}" \
    --variant "rot45_e30={\"augment\": {\"rotation\": 45}}" \
    --variant "rot60_e30={\"augment\": {\"rotation\": 60}}" &
fi
wait
