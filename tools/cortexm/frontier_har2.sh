#!/usr/bin/env bash
# The device half of the HAR-2 frontier (docs/frontier.md, issue 28 item 3): a 1-epoch run of
# every graph variant (a graph's Cortex-M4 cost does not depend on its training), then
# c_frontier.py on each run and on the shipped tags, into the committed device JSON.
#   bash tools/cortexm/frontier_har2.sh [DATA (default ../shared/data/har)] [WORK (default /tmp/frontier)]
# Then `zoo bench frontier` joins it to the CV results and writes docs/frontier.md.
set -eu
data=${1:-../shared/data/har} work=${2:-/tmp/frontier}
out=results/frontier/har2_device.json
mkdir -p "$work/runs"
train() {  # train NAME ZOO-TRAIN-ARGS...: reuses a finished run
  local name=$1; shift
  [ -f "$work/runs/$name/metrics.json" ] || zoo train --task har2 --backend jax "$@" \
    --epochs 1 --data-dir "$data" --out "$work/runs/$name"
}
S=(--model sirnn)   # the har2-sirnn recipe: units 80, rank 16, premultiply, state clip 1, 8-bit state
train p_r16_u80 "${S[@]}"      # the shipped graph, to show how little training moves its cost
train p_r16_u80_qat "${S[@]}" --option qat=int8
train l_r16_u80 "${S[@]}" --option premultiply=false
train l_r16_u80_qat "${S[@]}" --option premultiply=false --option qat=int8
train l_r8_u80 "${S[@]}" --option premultiply=false --rank 8
train l_r8_u80_qat "${S[@]}" --option premultiply=false --rank 8 --option qat=int8
train l_r4_u80 "${S[@]}" --option premultiply=false --rank 4
train l_r4_u80_qat "${S[@]}" --option premultiply=false --rank 4 --option qat=int8
for u in 64 48; do
  train p_r16_u$u "${S[@]}" --units $u
  train p_r16_u${u}_qat "${S[@]}" --units $u --option qat=int8
  train l_r16_u$u "${S[@]}" --units $u --option premultiply=false
  train l_r16_u${u}_qat "${S[@]}" --units $u --option premultiply=false --option qat=int8
done
# the har2-fastgrnn recipe (W rank 5, U rank 40, sparse training); TensorFlow: its sparsity
# step fails under JAX here (TypeError: 'NoneType' object is not callable at `var.numpy()`,
# training/callbacks.py's hard threshold)
train fastgrnn_u80 --model fastgrnn --backend tensorflow
train fastgrnn_u80_qat --model fastgrnn --backend tensorflow --option qat=int8
train lstm_u80 --model lstm --recipe none --units 80
# the GRU baseline's QAT graphs: Keras's step and the lean one (zoo.GRU step_graph="lean")
train gru_u80_qat --model gru --recipe none --units 80 --option qat=int8
train gru_u80_qat_lean --model gru --recipe none --units 80 --option qat=int8 --option step_graph=lean
items=(sirnn.har2=models/pretrained/sirnn.har2 sirnn.har2_gen1=models/archive/sirnn.har2_gen1
       gru.har2=models/pretrained/gru.har2 gru.har2_qat=models/archive/gru.har2_qat)
for run in "$work"/runs/*/; do items+=("$(basename "$run")=$run"); done
# the shipped tags carry no test set: their C is checked on the task's data, found through
# ZOO_DATA_DIR (else it says "not at hand" and skips the check)
ZOO_DATA_DIR=${ZOO_DATA_DIR:-$data} python tools/cortexm/c_frontier.py --out "$out" --work "$work/work" "${items[@]}"
