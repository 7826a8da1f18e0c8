"""The shipping retrain of the HAR-2 campaign's choice (generation 2 of ``sirnn.har2``), laid out
as ``zoo sweep cv --final`` lays out its runs, with the QAT fine-tune chained to it:

1. ``rot15`` (the shipped recipe + rotation augmentation 15 degrees) on all 21 training
   subjects, no validation split, 30 epochs (the CV budget; the CV's mean curve peaked at 28),
   seed 0 (`experiments.trials.final_trial`);
2. ``rot15_qat``: that run fine-tuned with ``qat="int8"`` for 10 epochs at lr 1e-3
   (`--init-from` the run of step 1).

    KERAS_BACKEND=jax python experiments/campaigns/har2_final.py [CAMPAIGN_OUT]

CAMPAIGN_OUT (default ``bench/sweeps/har2-campaign``) holds the campaign's ``sweep.json`` (the
command of experiments/campaigns/har2_cv.sh or docs/qat.md); finished runs are reused.
"""

import json
import sys
from pathlib import Path

from experiments import trials
from training.config import TrainConfig
from training.runs import train_or_reuse


def main(out: str = "bench/sweeps/har2-campaign") -> None:
    plan = json.loads(Path(out, "sweep.json").read_text())["trials"]
    fold0 = {t["variant"]: t for t in plan if t["fold"] == 0}
    base = trials.final_trial(fold0["rot15"], 30, out)
    train_or_reuse(TrainConfig.from_dict(base["config"]), base["run_dir"],
                   data_dir=base["data_dir"])
    qat = trials.final_trial(fold0["rot15_qat"], 10, out)
    qat["config"]["init_from"] = base["run_dir"]
    train_or_reuse(TrainConfig.from_dict(qat["config"]), qat["run_dir"], data_dir=qat["data_dir"])
    print("final runs:", base["run_dir"], qat["run_dir"])


if __name__ == "__main__":
    main(*sys.argv[1:])
