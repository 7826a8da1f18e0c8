"""``zoo analyze``: the theory papers as measurements of a trained recurrent model.

Each module turns one of the theory papers into numbers computed from a model and the data it
saw. Papers are cited by key (the full citations are in ``docs/analysis.md``): 000 Miller & Hardt
(stable recurrent models, truncation), 001 Ribeiro et al. (memory vs smoothness), 002 Cayci &
Eryilmaz (gradient descent on RNNs), 003 Panigrahi & Goyal (learning and generalization in RNNs),
004 Kag et al., ICLR 2020 (the iRNN).

- `stepper`: the recurrent cell as a step map ``s_t = f(s_{t-1}, x_t)``, its visited states and
  batched Jacobians (every cell and Keras baseline; LSTM's state is ``[h, c]``).
- `stability`: sigma_max of the recurrence, the empirical contraction constant, 001's regime,
  the iRNN's equilibrium checks (004 Prop. 2, A.7.6) and 002's memory factor.
- `gradients`: ``||dh_T/dh_s||`` through time and the input sensitivity by lag (004 Fig. 3b, 8;
  000 Fig. 2).
- `truncation`: accuracy of the model run on only the last k inputs, Lemma 1's state bound and
  Prop. 1's k(eps) (000).
- `memory`: the ridge-regression probe from h_T to x_{T-l+1} by lag l (003 Sec. 4.4).
- `report`: all of them on a run directory, written as report.md, report.json and plots.

This package sits above training: it imports zoo and training; only the CLI imports it.
"""

__all__ = ["analyze_model", "analyze_run"]


def __getattr__(name):
    # Lazy, so that `zoo analyze --help` (which imports edge_rnn_zoo.analyze_cli) loads no Keras.
    if name in __all__:
        from zoo.experiments.analysis import report

        return getattr(report, name)
    raise AttributeError(f"module 'zoo.experiments.analysis' has no attribute {name!r}")
