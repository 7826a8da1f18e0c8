"""The core every layer stands on: what a command needs before any model exists.

- `zoo.core.flags`: the command-line vocabulary (typed ``KEY=VALUE`` options, duration and
  size parsers) shared by every subcommand's parser;
- `zoo.core.logs`: the package's quiet-by-default logging and progress switches;
- `zoo.core.storage`: the zoo's folders on disk (ownership markers, atomic writes, staging,
  the swap that replaces a run or an export only after success);
- `zoo.core.locking`: the per-directory locks those folders are written and read under;
- `zoo.core.cv_results`: the typed record of a ``zoo sweep cv`` results file (``fold<k>.json``),
  written by the sweep (experiments) and read by ``zoo ship`` (export) as well.

The core imports nothing else of the project (tests/test_architecture.py checks it), so the
cells, data, training, export, experiments and the command line all import it downward.
"""

# The package's version, written once: ``zoo.__version__`` and the storage markers read it here.
__version__ = "0.1.0"
