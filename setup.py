"""Packaging glue that pyproject.toml alone cannot express: the top-level ``models/`` folder
(recipes and pretrained models) installs as the ``zoo.models`` package, so that a normal wheel
carries it and ``importlib.resources.files("zoo.models")`` finds it in every kind of install."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["zoo", "zoo.*", "training", "training.*", "export",
                                    "export.*", "edge_rnn_zoo", "experiments",
                                    "experiments.*"]) + ["zoo.models"],
    package_dir={"zoo.models": "models"},
)
