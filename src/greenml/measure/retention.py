"""How long a Meter keeps power samples: only what a window or a consumer still needs.

:meth:`greenml.measure.meter.Meter.forget_before` drops samples of one device
before the earliest time still needed by

- any holder: each ``holder`` keeps its own mark (the latest ``time_s`` it gave,
  per device) until :meth:`~greenml.measure.meter.Meter.release`;
- any open window: a window needs the samples around its start only until a
  sample after its start arrives; then the energy at its start is pinned (a
  number kept with the window) and its result stays exact;
- the present: nothing at or after now.

The sample just before that time is kept, so every query from it on (windows,
``Meter.timeline`` with a later ``since_s``) is exact. Samples go in halves
(nothing until half of them can go), so the cost is O(1) amortized per sample
and memory stays within twice what is needed; ``Meter.timeline`` without
``since_s`` then starts at the first kept sample.
"""

from __future__ import annotations

from collections.abc import Sequence

from greenml.measure.window_energy import Channel, WindowStart, pin_window_starts


def trim_channel(channel: Channel, cut: float, begins: Sequence[WindowStart]) -> int:
    """Drop ``channel``'s samples before monotonic ``cut`` that no open window (``begins``)
    still needs; returns how many samples went."""
    cut = pin_window_starts(channel, begins, cut)
    gaps = channel.gaps  # closed gaps wholly before every open window and the cut
    oldest = min([cut, *(b.mono_s for b in begins)])
    done = next((i for i, (_, end) in enumerate(gaps) if end >= oldest), len(gaps))
    del gaps[:done]
    if channel.usage is not None:
        channel.usage.trim(cut, min_fraction=0.5)
    return channel.timeline.trim(cut, min_fraction=0.5)
