"""The opt-in integer-friendly state shared by the cells: clip the state, then (optionally)
straight-through fake-quantize it to the grid an integer step model feeds back."""

from keras import ops


def check_state_bound(state_clip, state_quant_bits, grid: str):
    """Validated ``(state_clip, state_quant_bits)`` as (float | None, int | None); ``grid``
    names the clipping range in the error message."""
    if state_clip is not None and not state_clip > 0:
        raise ValueError(f"state_clip must be None or > 0, got {state_clip}")
    if state_quant_bits is not None:
        if state_clip is None:
            raise ValueError("state_quant_bits needs state_clip: the fake-quantization grid "
                             f"spans {grid}")
        if not 2 <= int(state_quant_bits) <= 16:
            raise ValueError(f"state_quant_bits must be in 2..16, got {state_quant_bits}")
    return (None if state_clip is None else float(state_clip),
            None if state_quant_bits is None else int(state_quant_bits))


def bound_state(x, state_clip, state_quant_bits, signed: bool):
    """Clip ``x`` to ``[0, c]`` (or ``[-c, c]`` when ``signed``) and round it to the b-bit grid
    (2^b - 1 steps on [0, c]; 2^(b-1) - 1 steps per side, zero on the grid, when signed) in the
    forward pass only: the gradient passes straight through."""
    if state_clip is None:
        return x
    x = ops.clip(x, -state_clip if signed else 0.0, state_clip)
    if state_quant_bits is not None:
        levels = 2 ** (state_quant_bits - 1) - 1 if signed else 2 ** state_quant_bits - 1
        scale = state_clip / levels
        x = x + ops.stop_gradient(ops.round(x / scale) * scale - x)  # forward q, backward id
    return x
