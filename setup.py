"""Packaging glue that pyproject.toml alone cannot express: the top-level ``models/`` folder
(recipes and pretrained models) installs as the ``zoo.models`` package, so that a normal wheel
carries it and ``importlib.resources.files("zoo.models")`` finds it in every kind of install.

Its data folders ``recipes/`` and ``pretrained/`` (and the C / C++ template folders of
``export/``) are listed as packages too: Python can import
them (namespace packages), and setuptools warns, and will stop installing them, when an importable
folder carrying package data is missing from ``packages``. The license is given here as a plain
string: setuptools >= 77 deprecates ``project.license`` as a TOML table, and the SPDX string it
wants there fails in setuptools < 77, which a ``--no-build-isolation`` build may use."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["zoo", "zoo.*", "training", "training.*", "export",
                                    "export.*", "edge_rnn_zoo", "experiments",
                                    "experiments.*"])
    + ["zoo.models", "zoo.models.recipes", "zoo.models.pretrained"]
    # the C / C++ template folders (package data, importable as namespace packages too)
    + ["export.templates", "export.c_backend.templates", "export.c_backend.frontend"],
    license="Apache-2.0",
    package_dir={"zoo.models": "models"},
)
