"""The experiments layer (layer 4): benchmarks (`experiments.bench`, `experiments.benchmarks`,
`experiments.kws_bench`, `experiments.c_bench`, ...), the theory report (`experiments.analysis`),
sweeps, cross-validation tables and the shipping protocol (`experiments.ship`), built on ``zoo``,
``training`` and ``export``; nothing below imports it.

Importing this package imports nothing heavy: Ray (the optional ``sweep`` extra) is imported only
when a sweep runs (`experiments.engine`).
"""

# TensorFlow's native start-up lines stay off stderr, as under ``import zoo`` (`zoo.quiet`).
from zoo import quiet as _quiet

_quiet.install()
