#!/usr/bin/env bash
# The device half of the per-second frontier (issue 50 item 3): a 1-epoch run of each graph of
# experiments/campaigns/frames_cv.sh (k samples per step: the premultiplied float stages
# p<k>_*, the lean float l<k>_*, and their lean QAT stages at the 98th percentile, l<k>_*_qat;
# HAR-2 also round 7's 80-unit premultiplied graph at k = 8, f8_u80_r16 and its QAT), then
# c_frontier.py on each run into the committed device JSON. A key already in the JSON is kept
# (FORCE=1 measures it again). A graph's Cortex-M4 cost does not depend on its training.
#   bash tools/cortexm/frontier_frames.sh har2|dsa19 [DATA (default ../shared/data/<har|dsa19>)] [WORK]
# Then: zoo bench frontier (HAR-2), or the command at the top of docs/frontier_dsa19.md.
set -eu
task=${1:?usage: frontier_frames.sh har2|dsa19 [DATA] [WORK]}
case $task in
  har2) default_data=../shared/data/har rotation=35 ;;
  dsa19) default_data=../shared/data/dsa19 rotation=60 ;;
  *) echo "frontier_frames.sh: the task must be har2 or dsa19, got $task" >&2; exit 2 ;;
esac
data=${2:-$default_data} work=${3:-/tmp/frontier-frames-$task}
out=results/frontier/${task}_device.json
mkdir -p "$work/runs"
# measure KEY K UNITS RANK PREMULTIPLY QAT: train the graph 1 epoch, then c_frontier.py on it
measure() {
  local key=$1 k=$2 units=$3 rank=$4 premultiply=$5 qat=$6
  if [ -z "${FORCE:-}" ] && python -c "import json,sys; sys.exit('$key' not in json.load(open('$out'))['variants'])"; then
    echo "$key: in $out already (FORCE=1 to measure it again)"; return
  fi
  local eta; eta=$(python -c "print(round($k * 0.01, 4))")
  local options=(--option premultiply=$premultiply --option eta_init=$eta)
  [ "$qat" = qat ] && options+=(--option qat=int8 --option qat_percentile=98)
  [ -f "$work/runs/$key/metrics.json" ] || zoo train --task "$task" --model sirnn --backend jax \
    --units "$units" --rank "$rank" "${options[@]}" --task-option frames_per_step="$k" \
    --augment rotation=$rotation --epochs 1 --data-dir "$data" --out "$work/runs/$key"
  ZOO_DATA_DIR=$data python tools/cortexm/c_frontier.py --out "$out" --work "$work/work" \
    "$key=$work/runs/$key"
}
if [ "$task" = har2 ]; then
  for graph in "8 48 16" "8 64 8"; do
    set -- $graph
    measure "p$1_u$2_r$3" "$@" true float
    measure "l$1_u$2_r$3_qat" "$@" false qat
  done
  measure l8_u48_r16 8 48 16 false float
  measure f8_u80_r16 8 80 16 true float
  measure f8_u80_r16_qat 8 80 16 true qat
else
  for graph in "5 40 8" "5 32 16" "25 48 8"; do
    set -- $graph
    measure "p$1_u$2_r$3" "$@" true float
    measure "l$1_u$2_r$3_qat" "$@" false qat
  done
fi
