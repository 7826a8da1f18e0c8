"""Data that installs with the zoo as ``zoo.models``: ``recipes/`` (training recipes, YAML) and
``pretrained/`` (trained models with their exports and cards, see `zoo.pretrained`)."""
