"""Per-query lists cut into padded batches of a few shapes.

RaggedLists are grouped by their length rounded up to a power of two (at least
:data:`MIN_WIDTH`), so one long list pads only its own bucket, and a bucket is
merged into the next wider one while both fit in one batch: padding a few
short lists costs less than compiling one more shape. Every batch of a bucket
has the same number of rows (whole padding rows fill the last), so a bucket
compiles one kernel, and a run of the same shape evaluated again finds it in
the compilation cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from lodestar import _shapes
from lodestar._trec.join import RaggedLists

# Every batch holds about this many items (rows times padded width). Small
# enough that a kernel's scratch memory stays below 32 MB even for all of
# trec_eval's measures (about 6 bytes per item per measure): the C library's
# allocator then keeps that buffer for the next batch instead of handing it
# back to the system and faulting it in again, page by page, on every batch,
# which cost a TREC-depth `-m all_trec` a third of its time (decision 0040).
BATCH_ITEMS = 1 << 15
# A bucket merges into the next wider one while all of both fit in this many
# items: padding a few short lists costs less than compiling (or loading) one
# more kernel. Larger than a batch, so that a run of lists of every length
# still makes few shapes.
MERGE_ITEMS = 1 << 20
MIN_WIDTH = 8


class Bucket(NamedTuple):
    """RaggedLists of one padded width, and how they are cut into batches.

    Attributes:
      width: The padded list length.
      queries: The lists (query indices) of the bucket, ascending.
      rows: Rows per batch, padding rows included.
    """

    width: int
    queries: np.ndarray
    rows: int

    @property
    def batches(self) -> int:
        """How many batches the bucket makes."""
        return -(-len(self.queries) // self.rows) if len(self.queries) else 0


class Batch(NamedTuple):
    """RaggedLists of one bucket, padded.

    Attributes:
      queries: int64 ``(real rows,)`` the query of each real row.
      where: bool ``(rows, width)``; False marks padding (and padding rows).
      items: The per-item arrays by name, ``(rows, width)``, zero on padding.
    """

    queries: np.ndarray
    where: np.ndarray
    items: dict[str, np.ndarray]


def plan(
    lengths: np.ndarray, *, batch_items: int = BATCH_ITEMS, merge_items: int = MERGE_ITEMS
) -> list[Bucket]:
    """The buckets of lists of these ``lengths``, narrow ones merged up, cut into batches.

    A bucket merges into the next wider one while both hold at most
    ``merge_items`` items at the wider width; a batch holds about
    ``batch_items``.
    """
    widths = np.array([_shapes.bucket(int(n), MIN_WIDTH) for n in lengths], np.int64)
    buckets, carried = [], np.zeros(0, np.int64)
    distinct = np.unique(widths)
    for index, width in enumerate(distinct):
        queries = np.concatenate((carried, np.flatnonzero(widths == width)))
        wider = int(distinct[index + 1]) if index + 1 < len(distinct) else None
        if wider is not None:
            merged = len(queries) + int((widths == wider).sum())
            if merged * wider <= merge_items:
                carried = queries
                continue
        carried = np.zeros(0, np.int64)
        width = int(width)
        most = max(1, batch_items // width)
        count = -(-len(queries) // most)
        # Equal batches, their rows rounded up to one of eight steps per
        # octave: a power of two would pad 1,500 queries to 2 x 1,024 rows.
        rows = min(most, _shapes.bucket_eighths(-(-len(queries) // count)))
        buckets.append(Bucket(width, np.sort(queries), rows))
    return buckets


def batches(
    lists: RaggedLists, bucket: Bucket, names: tuple[str, ...] | None = None
) -> Iterator[Batch]:
    """The padded batches of one bucket; ``names`` selects the per-item arrays."""
    names = tuple(lists.items) if names is None else names
    for start in range(0, len(bucket.queries), bucket.rows):
        chosen = bucket.queries[start : start + bucket.rows]
        yield pad(lists, chosen, bucket.rows, bucket.width, names)


def pad(lists: RaggedLists, queries: np.ndarray, rows: int, width: int, names) -> Batch:
    """The lists ``queries`` as ``(rows, width)`` arrays, padding rows and columns at the end."""
    lengths = lists.lengths[queries]
    row = np.repeat(np.arange(len(queries)), lengths)
    column = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    source = np.repeat(lists.offsets[queries], lengths) + column
    where = np.zeros((rows, width), bool)
    where[row, column] = True
    items = {}
    for name in names:
        values = lists.items[name]
        padded = np.zeros((rows, width), values.dtype)
        padded[row, column] = values[source]
        items[name] = padded
    return Batch(queries, where, items)
