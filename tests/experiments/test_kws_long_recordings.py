"""zoo.experiments.kws_long_recordings: how recordings are built and how detections are scored."""

from __future__ import annotations

import numpy as np

from zoo.experiments.kws_long_recordings import (GAP, LATE, Counts, Recording, build_recording,
                                             build_recordings, score)


def hop_at(sample: int) -> int:
    """The hop whose frame ends at ``sample`` (a report is made at 160 t + 400)."""
    return (sample - 400) // 160


def test_score_counts_hits_misses_duplicates_and_false_alarms():
    rec = Recording(np.zeros(100000, np.int16), labels=(2, 3, 4),
                    spans=((16000, 32000), (48000, 64000), (80000, 96000)))
    detections = [
        (hop_at(5000), 2, 200),            # before every clip: a false alarm
        (hop_at(20000), 2, 200),           # word 2 in its clip: hit
        (hop_at(32000 + LATE - 160), 2, 200),  # word 2 again, late but in its window: duplicate
        (hop_at(50000), 5, 200),           # a wrong word in word 3's window: false alarm
        (hop_at(96000 + LATE - 160), 4, 200),  # word 4 just inside its late window: hit
    ]
    assert score(detections, rec) == Counts(keywords=3, hits=1, missed=1, duplicated=1,
                                            false_alarms=2)
    late = [(hop_at(32000 + LATE + 160), 2, 200)]  # after the late window: not a hit
    assert score(late, rec) == Counts(keywords=3, hits=0, missed=3, duplicated=0, false_alarms=1)


def test_recordings_put_each_clip_after_a_gap_over_noise():
    clips = [(label, np.full(16000 - 100 * label, 1000, np.int16)) for label in range(2, 12)]
    noise = [np.full(200000, 7, np.int16)]
    rec = build_recording(clips, noise, np.random.default_rng(0))
    assert rec.labels == tuple(range(2, 12))
    ends = [0] + [e for _, e in rec.spans]
    gaps = [s - e for (s, _), e in zip(rec.spans, ends)] + [len(rec.samples) - ends[-1]]
    assert all(GAP[0] <= g <= GAP[1] for g in gaps), gaps
    for (s, e), (_, clip) in zip(rec.spans, clips):
        assert e - s == len(clip) and np.all(rec.samples[s:e] == 1007)  # the clip over the noise
    assert np.all(rec.samples[:rec.spans[0][0]] == 7)
    # recording r takes the r-th clip of each word: 3 clips of word 2, 1 of word 3
    more = [(2, c) for c in np.full((3, 8000), 5, np.int16)] + [(3, np.ones(8000, np.int16))]
    recs = build_recordings(more, noise, seed=1)
    assert [sorted(r.labels) for r in recs] == [[2, 3], [2], [2]]
