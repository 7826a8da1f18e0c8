"""Packaging glue that pyproject.toml alone cannot express: the top-level ``models/`` folder
(recipes and pretrained models) installs as the ``zoo.models`` package, and the layers'
folders ``training/``, ``export/`` and ``experiments/`` as ``zoo.training``, ``zoo.export`` and
``zoo.experiments``, so that a normal wheel
carries it and ``importlib.resources.files("zoo.models")`` finds it in every kind of install.

Its data folders ``recipes/`` and ``pretrained/`` (and the C / C++ template folders of
``export/``) are listed as packages too: Python can import
them (namespace packages), and setuptools warns, and will stop installing them, when an importable
folder carrying package data is missing from ``packages``. The license is given here as a plain
string: setuptools >= 77 deprecates ``project.license`` as a TOML table, and the SPDX string it
wants there fails in setuptools < 77, which a ``--no-build-isolation`` build may use."""

from setuptools import find_packages, setup

# The layers' folders, installed under the package's own name (``training/`` as
# ``zoo.training``...), so that nothing generic lands on a user's import path.
NAMESPACED = ("training", "export", "experiments")

setup(
    packages=find_packages(include=["zoo", "zoo.*", "edge_rnn_zoo"])
    + [f"zoo.{package}" for package in NAMESPACED]
    + [f"zoo.{package}.{sub}" for package in NAMESPACED for sub in find_packages(where=package)]
    + ["zoo.models", "zoo.models.recipes", "zoo.models.pretrained"]
    # the C / C++ template folders (package data, importable as namespace packages too)
    + ["zoo.export.templates", "zoo.export.c_backend.templates", "zoo.export.c_backend.frontend",
       "zoo.export.profile.harness"]
    # the measured C costs the cost model of `zoo tune` is fitted to (zoo.experiments.cost_model)
    + ["zoo.experiments.cost_data"],
    license="Apache-2.0",
    package_dir={"zoo.models": "models", **{f"zoo.{package}": package for package in NAMESPACED}},
)
