#!/usr/bin/env bash
# The device half of the DSA-19 frontier (docs/frontier_dsa19.md; issue 28 item 3): c_frontier.py
# on the shipped DSA-19 tags and on fold 0 of each SiRNN graph of the DSA-19 campaign
# (experiments/campaigns/dsa19_cv.sh; a graph's Cortex-M4 cost does not depend on its training
# beyond its scales), into the committed device JSON. Then:
#   zoo bench frontier --task dsa19 --device results/frontier/dsa19_device.json \
#     --results results/dsa19-campaign --int8-results results/dsa19-campaign-int8 \
#     --doc docs/frontier_dsa19.md --plot docs/img/frontier_dsa19.png
#   bash tools/cortexm/frontier_dsa19.sh [CAMPAIGN_OUT (default bench/sweeps/dsa19-campaign)] [WORK]
set -eu
campaign=${1:-bench/sweeps/dsa19-campaign} work=${2:-/tmp/frontier-dsa19}
out=results/frontier/dsa19_device.json
items=(sirnn.dsa19=models/pretrained/sirnn.dsa19 sirnn.dsa19_gen1=models/archive/sirnn.dsa19_gen1
       sirnn.dsa19_gen3=models/archive/sirnn.dsa19_gen3 gru.dsa19=models/pretrained/gru.dsa19
       gru.dsa19_gen1=models/archive/gru.dsa19_gen1)
# Round 5 (session 12): the lean graph wider (units 128) and of rank 32, QAT.
for variant in l_r16_u80_rot25 l_r16_u80_rot25_qat l_r16_u128_rot60_qat l_r32_u80_rot60_qat; do
  items+=("$variant=$campaign/dsa19/sirnn/$variant/fold0")
done
python tools/cortexm/c_frontier.py --out "$out" --work "$work" "${items[@]}"
