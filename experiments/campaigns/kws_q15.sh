#!/usr/bin/env bash
# The KWS recipe on the q15 front end (issue #45 item 2, docs/kws.md section 8): the shipped
# sirnn.google12_testset_int_qat recipe (SpecAugment + time shift + mixup 0.2, 160 epochs,
# the premultiplied SiRNN) with features=int_logmel_q15, then its QAT stage (10 epochs at lr
# 1e-3, without mixup) on the lean graph, which init_from folds the float model into exactly
# (U applied once: the step the device runs). Seeds as arguments (default 0 1 2); a finished
# run is kept (zoo train resumes or reuses it).
#   bash experiments/campaigns/kws_q15.sh ARCHIVE [OUT] [SEEDS...]
set -eu
data=${1:?usage: kws_q15.sh SPEECH_COMMANDS_TEST_SET_ARCHIVE [out] [seeds...]}
out=${2:-bench/kws-q15}; shift $(( $# > 1 ? 2 : 1 ))
seeds=${*:-0 1 2}
common=(--task google12_testset --model sirnn --recipe none --units 80 --rank 16
        --option state_clip=1.0 --option state_quant_bits=8 --task-option features=int_logmel_q15
        --augment time_mask=10 --augment feature_mask=4 --augment time_shift=10 --batch-size 100
        --backend jax --data-dir "$data")
for s in $seeds; do
  f="$out/sirnn-mixup-s$s" q="$out/sirnn-mixup-lean-qat-s$s"
  [ -f "$f/metrics.json" ] || zoo train "${common[@]}" --augment mixup=0.2 --epochs 160 \
    --patience 40 --lr 0.01 --seed "$s" --out "$f"
  [ -f "$q/metrics.json" ] || zoo train "${common[@]}" --option premultiply=false --option qat=int8 \
    --epochs 10 --lr 0.001 --patience 0 --seed "$s" --init-from "$f" --out "$q"
done
# Each QAT stage as the int8 step export a device runs (its LiteRT check on the test speakers),
# then int8 under TensorFlow Lite Micro on the test speakers' 410 clips through the q15 front
# end (kws_frontend_eval; its --c-check compares kws_app with the reference on every clip).
models=()
for s in $seeds; do
  q="$out/sirnn-mixup-lean-qat-s$s"
  [ -d "$q/export-step-int8" ] || zoo export "$q" --quantize int8 --form step --data-dir "$data"
  models+=("q15_s$s=$q/export-step-int8")
done
python -m zoo.experiments.kws_frontend_eval --data-dir "$data" --models "${models[@]}" ${C_CHECK:+--c-check}
