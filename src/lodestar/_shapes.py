"""Padded shapes: the one rounding rule every batching path shares (no JAX needed)."""


def bucket(size: int, minimum: int = 1) -> int:
    """``size`` rounded up to a power of two, at least ``minimum``.

    Padding lists and batches to a handful of shapes means a stream of
    differently sized inputs compiles a handful of kernels instead of one per
    shape; padding changes no result.
    """
    return max(minimum, 1 << max(size - 1, 0).bit_length())


def bucket_eighths(size: int) -> int:
    """``size`` rounded up to one of eight steps between powers of two (padding under 1/8).

    For the rows of a batch, where a power of two would pad a run of 1,500
    queries cut in two batches to 2 × 1,024 rows, a third of them padding;
    eight steps per octave still keep runs of similar sizes on one compiled
    shape.
    """
    if size <= 8:
        return bucket(size)
    step = 1 << (max(size - 1, 0).bit_length() - 4)
    return -(-size // step) * step
