"""Motion sensors found from a window file's channel names: what the ``windows`` task's option
``sensors: auto`` (its default) turns with the rotation augmentation.

A channel named ``<stem>_x`` / ``<stem>_y`` / ``<stem>_z`` (also ``-``, ``.``, a space or no
separator: ``accX``) is one axis of a 3-axis sensor when its stem names an accelerometer,
gyroscope, magnetometer or gravity vector (a token ``acc``, ``gyro``, ``mag``... of the stem,
split at separators and camel case) and the stem has exactly one channel per axis. Triples whose
stems differ only in those sensor words and in the signal words ``body`` / ``total`` / ``linear``
/ ``raw`` are one device and turn together (UCI HAR's ``body_acc``, ``total_acc`` and
``body_gyro`` of one phone); any other word tells devices apart (DSA-19's ``T_acc`` and
``RA_acc``: torso and right arm, each turned by its own rotation). Channels of other names
(``temperature``, ``ecg``, ``grid_x``) are left alone: a rotation would mean nothing to them.
"""

from __future__ import annotations

import re
from collections import defaultdict

# Words that make a stem a 3-axis motion sensor (lower case, whole tokens).
SENSOR_WORDS = frozenset({"acc", "accel", "accelerometer", "acceleration", "gyr", "gyro",
                          "gyroscope", "mag", "magn", "magnetometer", "magnetic", "gravity",
                          "grav"})
# Words that name a component of the same device's signal, not another device.
SIGNAL_WORDS = frozenset({"body", "total", "linear", "lin", "raw", "filtered", "calibrated"})

_AXIS = re.compile(r"^(?P<stem>.*?[A-Za-z0-9])[ _.\-]?(?P<axis>[xyzXYZ])$")
_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def stem_tokens(stem: str) -> list[str]:
    """``stem``'s words in lower case, split at separators, digits and camel case."""
    return [t.lower() for t in _TOKEN.findall(stem)]


def sensors_from_channel_names(channels) -> list[list[list[int]]]:
    """The devices of ``channels`` (a list of names): each a list of xyz index triples, in the
    order of their first channel (module doc); ``[]`` when no name forms a sensor triple."""
    axes: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, name in enumerate(channels):
        match = _AXIS.match(str(name).strip())
        if match:
            axes[match["stem"]][match["axis"].lower()].append(index)
    devices: dict[tuple[str, ...], list[list[int]]] = {}
    for stem, found in axes.items():
        tokens = stem_tokens(stem)
        if not SENSOR_WORDS & set(tokens):
            continue
        if sorted(found) != ["x", "y", "z"] or any(len(v) != 1 for v in found.values()):
            continue  # an axis missing or named twice: not a clean triple
        device = tuple(t for t in tokens if t not in SENSOR_WORDS | SIGNAL_WORDS)
        devices.setdefault(device, []).append([found[a][0] for a in "xyz"])
    return sorted((sorted(triples) for triples in devices.values()), key=lambda d: d[0][0])


__all__ = ["sensors_from_channel_names", "stem_tokens", "SENSOR_WORDS", "SIGNAL_WORDS"]
