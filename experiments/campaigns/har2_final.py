"""The shipping retrain of a campaign's choice (generation 2 of ``sirnn.har2``, ``sirnn.dsa19``:
any task, despite the name, which the cards' commands keep), laid out
as ``zoo sweep cv --final`` lays out its runs, with the QAT fine-tune chained to it:

1. FLOAT (a CV variant, e.g. ``rot15``: the shipped recipe + rotation augmentation) on all
   training subjects, no validation split, 30 epochs (the CV budget; the CV's mean curves peaked
   at 27-28), seed 0 (`experiments.trials.final_trial`);
2. QAT (its fine-tune variant, e.g. ``rot25_qat``): that run fine-tuned with ``qat="int8"`` for
   10 epochs at lr 1e-3 (`--init-from` the run of step 1).

    KERAS_BACKEND=jax python experiments/campaigns/har2_final.py CAMPAIGN_OUT FLOAT QAT
    # sirnn.har2 (generation 2):   bench/sweeps/har2-campaign rot15 rot15_qat
    # sirnn.har2_lean:             bench/sweeps/har2-lean l_r16_u48 l_r16_u48_qat
    # sirnn.dsa19 (generation 2):  bench/sweeps/dsa19-campaign rot25_e30 rot25_qat

CAMPAIGN_OUT holds the campaign's ``sweep.json`` (written by the sweeps of the campaign scripts
beside this one); finished runs are reused.
"""

import dataclasses
import json
import sys
from pathlib import Path

from experiments import trials
from training.config import TrainConfig
from training.runs import train_or_reuse


def main(out: str, float_variant: str, qat_variant: str) -> None:
    plan = json.loads(Path(out, "sweep.json").read_text())["trials"]
    fold0 = {t.variant: t for t in map(trials.Trial.from_dict, plan) if t.fold == 0}
    missing = [v for v in (float_variant, qat_variant) if v not in fold0]
    if missing:
        raise SystemExit(f"{out}/sweep.json has no variant {', '.join(missing)}; "
                         f"it has: {', '.join(sorted(fold0))}")
    base = trials.final_trial(fold0[float_variant], 30, out)
    train_or_reuse(TrainConfig.from_dict(base.config), base.run_dir, data_dir=base.data_dir)
    qat = trials.final_trial(fold0[qat_variant], 10, out)
    qat = dataclasses.replace(qat, config={**qat.config, "init_from": base.run_dir})
    train_or_reuse(TrainConfig.from_dict(qat.config), qat.run_dir, data_dir=qat.data_dir)
    print("final runs:", base.run_dir, qat.run_dir)


if __name__ == "__main__":
    from training import logs

    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    logs.configure()  # the training progress, as `zoo train` prints it
    main(*sys.argv[1:])
