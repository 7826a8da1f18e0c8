"""The shipping retrain of a campaign's choice (generation 2 of ``sirnn.har2``, ``sirnn.dsa19``:
any task, despite the name, which the cards' commands keep), laid out
as ``zoo sweep cv --final`` lays out its runs, with the QAT fine-tune chained to it:

1. FLOAT (a CV variant, e.g. ``rot15``: the shipped recipe + rotation augmentation) on all
   training subjects, no validation split, 30 epochs (the CV budget; the CV's mean curves peaked
   at 27-28), seed 0 (`zoo.experiments.trials.final_trial`);
2. QAT (its fine-tune variant, e.g. ``rot25_qat``, whose ``init_from`` is ``variant:FLOAT``):
   that run fine-tuned with ``qat="int8"`` for 10 epochs at lr 1e-3 (`--init-from` the run of
   step 1), into ``final-<QAT>-e10``.

``zoo sweep cv --final`` now chains the stages itself: when the CV chooses a QAT stage it
retrains FLOAT at FLOAT's CV epoch, then the stage at its own CV epoch from that retrain
(``final-<QAT>-e<k>-from-<FLOAT>-e<n>``; it used to fine-tune fold 0's FLOAT run, which is why
this script was written). This script stays for the fixed 30 + 10 epochs the shipped models
were retrained with and for their run names (their cards' provenance), which it reuses.

    KERAS_BACKEND=jax python experiments/campaigns/har2_final.py CAMPAIGN_OUT FLOAT QAT [LABEL]
    # sirnn.har2 (generation 2):   bench/sweeps/har2-campaign rot15 rot15_qat
    # sirnn.har2_lean:             bench/sweeps/har2-lean l_r16_u48 l_r16_u48_qat
    # sirnn.dsa19 (generation 2):  bench/sweeps/dsa19-campaign rot25_e30 rot25_qat
    # sirnn.har2 (generation 3):   bench/sweeps/har2-levers rot35_e30 rot35_qat
    # sirnn.dsa19 (generation 4):  bench/sweeps/dsa19-campaign l_r16_u80_rot45 l_r16_u80_rot45_qat
    # gru.har2_qat:                bench/sweeps/har2-levers-baselines rot25_e30 rot25_qat gru
    # gru.har2 (generation 2):     bench/sweeps/har2-levers-baselines rot35_e30 rot35_qat_lean gru

LABEL names the model when CAMPAIGN_OUT holds several (a baselines folder: gru and lstm).
A FLOAT that distils (``distill`` with per-fold teachers) needs ``--final-teacher RUN_DIR`` (repeated
for an ensemble): the teachers' own retrains on every training subject.

CAMPAIGN_OUT holds the campaign's ``sweep.json`` (written by the sweeps of the campaign scripts
beside this one); finished runs are reused. A QAT variant that fine-tunes another variant than
FLOAT is refused.
"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from zoo.experiments import trials
from zoo.training.config import TrainConfig
from zoo.training.runs import train_or_reuse


def main(out: str, float_variant: str, qat_variant: str, label: str | None = None,
         teacher: list[str] | None = None) -> None:
    plan = [t for t in map(trials.Trial.from_dict,
                           json.loads(Path(out, "sweep.json").read_text())["trials"])
            if t.fold == 0]
    labels = sorted({t.label for t in plan})
    if label is None and len(labels) > 1:  # e.g. gru and lstm sharing a baselines folder
        raise SystemExit(f"{out}/sweep.json holds the models {', '.join(labels)}: name one (LABEL)")
    fold0 = {t.variant: t for t in plan if t.label == (label or labels[0])}
    missing = [v for v in (float_variant, qat_variant) if v not in fold0]
    if missing:
        raise SystemExit(f"{out}/sweep.json has no variant {', '.join(missing)} of "
                         f"{label or labels[0]}; it has: {', '.join(sorted(fold0))}")
    try:  # a FLOAT that distils needs its retrain's teacher (the folds' were chosen per fold)
        base = trials.final_trial(fold0[float_variant], 30, out, teacher or None)
    except ValueError as err:
        raise SystemExit(f"har2_final.py: {err}") from None
    qat = _qat_stage(fold0[qat_variant], plan, base, out)
    train_or_reuse(TrainConfig.from_dict(base.config), base.run_dir, data_dir=base.data_dir)
    train_or_reuse(TrainConfig.from_dict(qat.config), qat.run_dir, data_dir=qat.data_dir)
    print("final runs:", base.run_dir, qat.run_dir)


def _qat_stage(cv_trial: trials.Trial, plan: list[trials.Trial], base: trials.Trial,
               out: str) -> trials.Trial:
    """QAT's 10-epoch retrain from ``base`` (FLOAT's), in ``final-<QAT>-e10``. Its parent is
    found in a plan recorded before trials named it too, so that a QAT variant of another
    FLOAT is refused (SystemExit) rather than fine-tuned from this one."""
    stage = dataclasses.replace(cv_trial, parent=trials.parent_of(cv_trial, plan))
    try:
        qat = trials.final_trial(stage, 10, out, parent=base)
    except ValueError as err:
        raise SystemExit(f"har2_final.py: {err}") from None
    # `zoo sweep cv --final` names a stage's retrain after its parent's too; the shipped models'
    # cards name this one final-<QAT>-e10, the name it keeps (and an earlier run is reused by).
    name = f"final-{trials.slug(cv_trial.variant)}-e10"
    return dataclasses.replace(qat, run_dir=str(Path(qat.run_dir).with_name(name)))


if __name__ == "__main__":
    from zoo.core import logs

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("out", metavar="CAMPAIGN_OUT")
    parser.add_argument("float_variant", metavar="FLOAT")
    parser.add_argument("qat_variant", metavar="QAT")
    parser.add_argument("label", metavar="LABEL", nargs="?")
    parser.add_argument("--final-teacher", action="append", metavar="RUN_DIR",
                        help="for a FLOAT that distils: its retrain's teacher (a run on every "
                        "training subject; repeat it for an ensemble)")
    args = parser.parse_args()
    logs.configure()  # the training progress, as `zoo train` prints it
    main(args.out, args.float_variant, args.qat_variant, args.label, args.final_teacher)
