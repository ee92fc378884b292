"""Padded shapes: the one rounding rule every batching path shares (no JAX needed)."""


def bucket(size: int, minimum: int = 1) -> int:
    """``size`` rounded up to a power of two, at least ``minimum``.

    Padding lists and batches to a handful of shapes means a stream of
    differently sized inputs compiles a handful of kernels instead of one per
    shape; padding changes no result.
    """
    return max(minimum, 1 << max(size - 1, 0).bit_length())
