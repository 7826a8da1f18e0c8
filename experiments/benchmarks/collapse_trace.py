"""Trace what an iRNN's training does to its step size and state, epoch by epoch.

    python -m zoo.experiments.benchmarks.collapse_trace --task har2 \
        --data-dir ../shared/data/archives/uci_har_train_full.zip --epochs 20 \
        --option state_clip=1.0 --option state_quant_bits=8 --option eta_parametrization=raw \
        --out bench/collapse/raw

Per epoch it prints the training loss and accuracy, the validation accuracy, the step sizes eta
the recursion uses, and the share of final states at 0 and at the clip on 256 validation
sequences; every epoch's model is kept in ``--out`` (``epoch-NN.keras``) to look at afterwards.
This is how the collapse of docs/realscale.md was found: with a raw eta the run shows eta crossing
zero and every state going to 0 in the same epoch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from zoo.core.flags import int_in, number_in


def _options(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = yaml.safe_load(value)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--task", default="har2")
    parser.add_argument("--model", default="sirnn")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--epochs", type=int_in(1), default=20)
    parser.add_argument("--lr", type=number_in(0, low_open=True), default=1e-2)
    parser.add_argument("--batch-size", type=int_in(1), default=64)
    parser.add_argument("--seed", type=int_in(0), default=0)
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", required=True, help="folder for the per-epoch models")
    args = parser.parse_args(argv)

    import keras

    from zoo.training.config import TrainConfig
    from zoo.training.tasks import get_task
    from zoo.training.trainer import build_model, epoch_batches, recurrent_cell
    from zoo.layers import recurrent_layers

    task = get_task(args.task)
    data = task.load(args.data_dir, seed=args.seed)
    norm = data.normalization
    x_train, x_val = norm.apply(data.train.x), norm.apply(data.val.x)
    keras.utils.set_random_seed(args.seed)
    config = TrainConfig(task=args.task, model=args.model, model_options=_options(args.option),
                         lr=args.lr, clipnorm=1.0, batch_size=args.batch_size, seed=args.seed)
    model = build_model(config, task)
    cell = recurrent_cell(model)
    rnn = recurrent_layers(model)[0]
    states = keras.Model(model.inputs, rnn.output)
    probe = x_val[:256]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    class Trace(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            eta = np.asarray(keras.ops.convert_to_numpy(cell.eta_value())).ravel()
            h = states.predict(probe, verbose=0)
            clip = cell.state_clip or np.inf
            print(f"epoch {epoch + 1:>3}  loss {logs['loss']:.4f}  acc {logs['accuracy']:.4f}  "
                  f"val_acc {logs['val_accuracy']:.4f}  eta {np.round(eta, 4).tolist()}  "
                  f"states at 0 {np.mean(h <= 1e-6):.0%}  at clip {np.mean(h >= 0.999 * clip):.0%}",
                  flush=True)
            model.save(out / f"epoch-{epoch + 1:02d}.keras")

    steps = int(np.ceil(len(x_train) / args.batch_size))
    model.fit(epoch_batches(x_train, data.train.y, args.batch_size, args.seed, 0, args.epochs),
              steps_per_epoch=steps, epochs=args.epochs, validation_data=(x_val, data.val.y),
              callbacks=[Trace()], verbose=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
