"""The experiments layer (layer 4): benchmarks (`zoo.experiments.bench`, `zoo.experiments.benchmarks`,
`zoo.experiments.kws_bench`, `zoo.experiments.c_bench`, ...), the theory report (`zoo.experiments.analysis`),
sweeps and cross-validation tables (shipping is the export layer's: `zoo.export.ship`), built on ``zoo``,
``training`` and ``export``; nothing below imports it.

Importing this package imports nothing heavy: Ray (the optional ``sweep`` extra) is imported only
when a sweep runs (`zoo.experiments.engine`).
"""

# TensorFlow's native start-up lines stay off stderr, as under ``import zoo`` (`zoo.quiet`).
from zoo import quiet as _quiet

_quiet.install()
