#!/usr/bin/env bash
# The HAR-2 lever campaign (issue #29): 5-fold subject CV of the training levers that need no new
# code, each on top of the rotation-15 SiRNN recipe (the shipped har2-sirnn recipe, 30 epochs),
# beside the Keras GRU / LSTM without rotation and with rotation 25 at the same budget (the pair
# of har2_lean_cv.sh's rotation-15 baselines). Round 3 (session 10): rotation 25 with weight
# averaging (EMA), 60 epochs, rotation 35 and 45, QAT stages at lower rates, and QAT of the
# rotation-35 model (a stage, and from scratch); the GRU's QAT stage (zoo.GRU, qat=int8).
# Round 4 (session 11): the GRU at rotation 35 and 45 and its rotation-35 QAT stage, the fair
# pairs of the SiRNN's best recipe, and the QAT stages of the lean GRU step graph. Round 5
# (session 12): cosine annealing (lr_schedule cosine) of the rotation-35 recipe and its QAT stage,
# a cosine QAT stage of the rotation-35 model, distillation (each fold's student from that fold's
# Keras GRU at rotation 35, CV 96.26 %, or from the GRU + SiRNN rotation-35 ensemble; alpha 0.5,
# T 2) and its QAT stage (also distilled, from the ensemble), the rotation-35 QAT stage with
# its biases on the int32 grid (qat_bias, named: the earlier rot35_qat trained without it; the GRU's
# lean stage too, rot35_qat_lean_bias), and the LSTM at rotation 35 (the SiRNN's angle). Round 6
# (session 13): the step size eta's initial value (eta_init 0.05 / 0.1 against the recipe's 0.01,
# which the sigmoid parametrization barely moves): at eta 0.01 the increment eta * diff is at most
# 2.4 steps of the int8 state's grid and half a step at the median, so the int8 dynamics are
# rounding; each stage's QAT fine-tune beside it (stopped after 3 folds: both worse in float,
# 87.43 / 93.55 against 96.20; their variants are no longer run, the results files are kept).
# Then the QAT stages again with the ranges calibrated on the float step (the fix of
# zoo.qat.calibrate_ranges; the earlier stages began from clipped ranges): rot35_qat_cal (the
# config of rot35_qat_bias, run after the fix), the distilled model's stage, and its cosine
# stage; and eta_init 0.02 (twice the recipe's) with its calibrated QAT stage. Round 7
# (session 14): k = 2, 4, 8 samples per step (task option frames_per_step) with eta_init
# k * 0.01, the recipe's time constant in seconds with k times larger increments of the int8
# state per step, and their calibrated QAT stages; mixup 0.2 (augment mixup, new) on the
# rotation-35 recipe and on k = 4, each with its calibrated QAT stage (without mixup, as the KWS
# recipe's); and the lean step graph (U applied once: no second product p_high, which with the
# input costs the int8 step most, §13-14) at k = 4. Round 8 (session 15): distillation at
# k = 4 (the analogue of round 5's best int8 model, rot35_kd_ens_qat_cal): each fold's student
# from that fold's Keras GRU at k = 4 (f4_e30, new, also the fair float baseline at k = 4) and
# its k = 4 SiRNN (f4_eta04), and the student's calibrated QAT stage; the QAT stage of f4_eta04
# with its ranges at the 99th / 98th percentile of each tensor (model option qat_percentile,
# new; the stages so far: 99.99), and the same for the k = 1 recipe's stage and its distilled
# model's (rot35_qat_p98, rot35_kd_ens_qat_p98); the k = 4 GRU's lean QAT stage at both
# percentiles (the fair pair), and gru.har2's recipe (k = 1) at the 98th. Every finished
# trial lands in
# results/har2-campaign/ (commit it); run again anywhere to finish what is left (finished trials are skipped).
#   bash experiments/campaigns/har2_levers_cv.sh DATA [SLOTS_SIRNN] [SLOTS_BASELINES] [OUT]
# SLOTS_BASELINES 0 skips the GRU / LSTM sweep; BASELINE_PLATFORM=cuda runs it on a GPU (JAX).
set -u
. "$(dirname "$0")/common.sh"
data=${1:?usage: har2_levers_cv.sh UCI_HAR_ZIP_OR_FOLDER [slots_sirnn] [slots_baselines] [out]}
s1=${2:-2} s2=${3:-0} out=${4:-bench/sweeps/har2-levers}
common=(--task har2 --data-dir "$data" --folds 5 --backend jax --engine processes --epochs 30
        --results results/har2-campaign ${DRY:+--dry-run})
rot='"rotation": 15' rot25='"rotation": 25' qat='"model_options": {"qat": "int8"}'
qat_lean='"model_options": {"qat": "int8", "step_graph": "lean"}'  # the lean GRU step graph
cosine='"lr_schedule": "cosine", "lr_decay_epochs": null'  # in place of the recipe's step decay
# The fold teachers: the Keras GRU and SiRNN rotation-35 runs of these sweeps ({fold}: the same fold).
gru35="$out-baselines/har2/gru/rot35_e30/fold{fold}" sirnn35="$out/har2/sirnn/rot35_e30/fold{fold}"
kd_gru="\"distill\": {\"teacher\": \"$gru35\", \"alpha\": 0.5, \"temperature\": 2}"
# k samples per step (task option frames_per_step) with eta_init k * 0.01: the recipe's time
# constant in seconds, k times larger increments of the int8 state per step; $3: QAT.
# $4: more model options (e.g. the QAT ranges' percentile, round 8).
frames() { echo "\"task_options\": {\"frames_per_step\": $1}, \"model_options\": {\"eta_init\": $2${3:+, \"qat\": \"$3\"}${4:+, $4}}"; }
kd_ens="\"distill\": {\"teacher\": [\"$gru35\", \"$sirnn35\"], \"alpha\": 0.5, \"temperature\": 2}"
# The k = 4 fold teachers (round 8): the Keras GRU and the SiRNN with 4 samples per step.
gru_f4="$out-baselines/har2/gru/f4_e30/fold{fold}" sirnn_f4="$out/har2/sirnn/f4_eta04/fold{fold}"
kd_ens_f4="\"distill\": {\"teacher\": [\"$gru_f4\", \"$sirnn_f4\"], \"alpha\": 0.5, \"temperature\": 2}"
# rot15_valacc equals rot15_e30 by design in a CV (patience 0 keeps the last epoch, so the
# monitor picks nothing); selection on validation is the tables' CV-epoch column.
JAX_PLATFORMS=${SIRNN_PLATFORM:-cpu} python -m zoo.experiments.sweep cv "${common[@]}" --model sirnn \
  --out "$out" --max-concurrent "$s1" \
  --variant "rot25_e60={\"augment\": {$rot25}, \"epochs\": 60}" \
  --variant "rot15_e30={\"augment\": {$rot}}" \
  --variant "base_e30={}" \
  --variant "rot25_e30={\"augment\": {\"rotation\": 25}}" \
  --variant "rot25_qat={\"augment\": {\"rotation\": 25}, \"model_options\": {\"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:rot25_e30\"}" \
  --variant "rot25_qat_lr3e-4={\"augment\": {\"rotation\": 25}, \"model_options\": {\"qat\": \"int8\"},
    \"epochs\": 10, \"lr\": 0.0003, \"lr_decay_epochs\": null, \"init_from\": \"variant:rot25_e30\"}" \
  --variant "rot15_scale={\"augment\": {$rot, \"scale\": 0.1, \"magnitude_warp\": 0.1}}" \
  --variant "rot15_jitter={\"augment\": {$rot, \"jitter\": 0.05}}" \
  --variant "rot15_twarp={\"augment\": {$rot, \"time_warp\": 0.1}}" \
  --variant "rot15_valacc={\"augment\": {$rot}, \"monitor\": \"val_accuracy\"}" \
  --variant "rot15_lr5e-3={\"augment\": {$rot}, \"lr\": 0.005}" \
  --variant "rot15_u96={\"augment\": {$rot}, \"model_options\": {\"units\": 96}}" \
  --variant "l_r16_u128_rot15={\"augment\": {$rot}, \"model_options\": {\"premultiply\": false, \"units\": 128}}" \
  --variant "rot35_e30={\"augment\": {\"rotation\": 35}}" \
  --variant "rot25_ema99={\"augment\": {$rot25}, \"ema_momentum\": 0.99}" \
  --variant "rot25_ema995={\"augment\": {$rot25}, \"ema_momentum\": 0.995}" \
  --variant "rot25_qat_lr1e-4={\"augment\": {$rot25}, $qat, \"epochs\": 10, \"lr\": 0.0001,
    \"lr_decay_epochs\": null, \"init_from\": \"variant:rot25_e30\"}" \
  --variant "rot25_qat_lr1e-4_e20={\"augment\": {$rot25}, $qat, \"epochs\": 20, \"lr\": 0.0001,
    \"lr_decay_epochs\": null, \"init_from\": \"variant:rot25_e30\"}" \
  --variant "rot25_qat_lr3e-4_ema99={\"augment\": {$rot25}, $qat, \"epochs\": 10, \"lr\": 0.0003,
    \"lr_decay_epochs\": null, \"ema_momentum\": 0.99, \"init_from\": \"variant:rot25_e30\"}" \
  --variant "rot25_ema99_qat_lr1e-4={\"augment\": {$rot25}, $qat, \"epochs\": 10, \"lr\": 0.0001,
    \"lr_decay_epochs\": null, \"ema_momentum\": 0.99, \"init_from\": \"variant:rot25_ema99\"}" \
  --variant "rot35_qat={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
  --variant "rot35_qat_scratch={\"augment\": {\"rotation\": 35}, $qat}" \
  --variant "rot45_e30={\"augment\": {\"rotation\": 45}}" \
  --variant "rot35_cos={\"augment\": {\"rotation\": 35}, $cosine}" \
  --variant "rot35_cos_qat={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_cos\"}" \
  --variant "rot35_qat_cos={\"augment\": {\"rotation\": 35}, $qat, \"epochs\": 10, \"lr\": 0.001, $cosine,
    \"init_from\": \"variant:rot35_e30\"}" \
  --variant "rot35_kd_gru={\"augment\": {\"rotation\": 35}, $kd_gru}" \
  --variant "rot35_kd_gru_qat={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_kd_gru\"}" \
  --variant "rot35_kd_ens={\"augment\": {\"rotation\": 35}, $kd_ens}" \
  --variant "rot35_kd_ens_qat={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_kd_ens\"}" \
  --variant "rot35_qat_bias={\"augment\": {\"rotation\": 35}, \"model_options\": {\"qat\": \"int8\", \"qat_bias\": true},
    $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
  --variant "rot35_qat_cal={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
  --variant "rot35_kd_ens_qat_cal={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_kd_ens\"}" \
  --variant "rot35_kd_ens_qat_cos_cal={\"augment\": {\"rotation\": 35}, $qat, \"epochs\": 10, \"lr\": 0.001, $cosine,
    \"init_from\": \"variant:rot35_kd_ens\"}" \
  --variant "rot35_eta02={\"augment\": {\"rotation\": 35}, \"model_options\": {\"eta_init\": 0.02}}" \
  --variant "rot35_eta02_qat_cal={\"augment\": {\"rotation\": 35}, \"model_options\": {\"eta_init\": 0.02, \"qat\": \"int8\"},
    $QAT_STAGE, \"init_from\": \"variant:rot35_eta02\"}" \
  --variant "rot35_kd_ens_qat_kd={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, $kd_ens, \"init_from\": \"variant:rot35_kd_ens\"}" \
  --variant "f2_eta02={\"augment\": {\"rotation\": 35}, $(frames 2 0.02)}" \
  --variant "f2_eta02_qat_cal={\"augment\": {\"rotation\": 35}, $(frames 2 0.02 int8), $QAT_STAGE, \"init_from\": \"variant:f2_eta02\"}" \
  --variant "f4_eta04={\"augment\": {\"rotation\": 35}, $(frames 4 0.04)}" \
  --variant "f4_eta04_qat_cal={\"augment\": {\"rotation\": 35}, $(frames 4 0.04 int8), $QAT_STAGE, \"init_from\": \"variant:f4_eta04\"}" \
  --variant "f8_eta08={\"augment\": {\"rotation\": 35}, $(frames 8 0.08)}" \
  --variant "f8_eta08_qat_cal={\"augment\": {\"rotation\": 35}, $(frames 8 0.08 int8), $QAT_STAGE, \"init_from\": \"variant:f8_eta08\"}" \
  --variant "rot35_mix02={\"augment\": {\"rotation\": 35, \"mixup\": 0.2}}" \
  --variant "rot35_mix02_qat_cal={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_mix02\"}" \
  --variant "f4_mix02={\"augment\": {\"rotation\": 35, \"mixup\": 0.2}, $(frames 4 0.04)}" \
  --variant "f4_mix02_qat_cal={\"augment\": {\"rotation\": 35}, $(frames 4 0.04 int8), $QAT_STAGE, \"init_from\": \"variant:f4_mix02\"}" \
  --variant "f4_lean={\"augment\": {\"rotation\": 35}, \"task_options\": {\"frames_per_step\": 4},
    \"model_options\": {\"eta_init\": 0.04, \"premultiply\": false}}" \
  --variant "f4_lean_qat_cal={\"augment\": {\"rotation\": 35}, \"task_options\": {\"frames_per_step\": 4},
    \"model_options\": {\"eta_init\": 0.04, \"premultiply\": false, \"qat\": \"int8\"}, $QAT_STAGE, \"init_from\": \"variant:f4_lean\"}" \
  --variant "f4_kd_ens={\"augment\": {\"rotation\": 35}, $(frames 4 0.04), $kd_ens_f4}" \
  --variant "f4_kd_ens_qat_cal={\"augment\": {\"rotation\": 35}, $(frames 4 0.04 int8), $QAT_STAGE, \"init_from\": \"variant:f4_kd_ens\"}" \
  --variant "f4_eta04_qat_p99={\"augment\": {\"rotation\": 35}, $(frames 4 0.04 int8 '"qat_percentile": 99.0'), $QAT_STAGE, \"init_from\": \"variant:f4_eta04\"}" \
  --variant "f4_eta04_qat_p98={\"augment\": {\"rotation\": 35}, $(frames 4 0.04 int8 '"qat_percentile": 98.0'), $QAT_STAGE, \"init_from\": \"variant:f4_eta04\"}" \
  --variant "rot35_qat_p98={\"augment\": {\"rotation\": 35}, \"model_options\": {\"qat\": \"int8\", \"qat_percentile\": 98.0},
    $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
  --variant "rot35_kd_ens_qat_p98={\"augment\": {\"rotation\": 35}, \"model_options\": {\"qat\": \"int8\", \"qat_percentile\": 98.0},
    $QAT_STAGE, \"init_from\": \"variant:rot35_kd_ens\"}" &
if [ "$s2" -gt 0 ]; then
  baseline=("${KERAS_BASELINE[@]}" --max-concurrent "$s2" --out "$out-baselines")
  ( export JAX_PLATFORMS=${BASELINE_PLATFORM:-cpu}
    rot25_e30="rot25_e30={\"augment\": {$rot25}}"
    python -m zoo.experiments.sweep cv "${common[@]}" --model gru "${baseline[@]}" \
      --variant base_e30={} --variant "$rot25_e30" \
      --variant "rot25_qat={\"augment\": {$rot25}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot25_e30\"}" \
      --variant "rot35_e30={\"augment\": {\"rotation\": 35}}" \
      --variant "rot45_e30={\"augment\": {\"rotation\": 45}}" \
      --variant "rot35_qat={\"augment\": {\"rotation\": 35}, $qat, $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
      --variant "rot25_qat_lean={\"augment\": {$rot25}, $qat_lean, $QAT_STAGE, \"init_from\": \"variant:rot25_e30\"}" \
      --variant "rot35_qat_lean={\"augment\": {\"rotation\": 35}, $qat_lean, $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
      --variant "rot35_qat_lean_bias={\"augment\": {\"rotation\": 35}, \"model_options\": {\"qat\": \"int8\",
        \"step_graph\": \"lean\", \"qat_bias\": true}, $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}" \
      --variant "f4_e30={\"augment\": {\"rotation\": 35}, \"task_options\": {\"frames_per_step\": 4}}" \
      --variant "f4_qat_lean={\"augment\": {\"rotation\": 35}, \"task_options\": {\"frames_per_step\": 4}, $qat_lean,
        $QAT_STAGE, \"init_from\": \"variant:f4_e30\"}" \
      --variant "f4_qat_lean_p98={\"augment\": {\"rotation\": 35}, \"task_options\": {\"frames_per_step\": 4},
        \"model_options\": {\"qat\": \"int8\", \"step_graph\": \"lean\", \"qat_percentile\": 98.0},
        $QAT_STAGE, \"init_from\": \"variant:f4_e30\"}" \
      --variant "rot35_qat_lean_p98={\"augment\": {\"rotation\": 35},
        \"model_options\": {\"qat\": \"int8\", \"step_graph\": \"lean\", \"qat_percentile\": 98.0},
        $QAT_STAGE, \"init_from\": \"variant:rot35_e30\"}"
    python -m zoo.experiments.sweep cv "${common[@]}" --model lstm "${baseline[@]}" \
      --variant base_e30={} --variant "$rot25_e30" \
      --variant "rot35_e30={\"augment\": {\"rotation\": 35}}"
  ) &
fi
wait
