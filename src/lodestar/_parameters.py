"""How a measure's parameters are read: the numbers trec_eval's parser takes.

Below the registry, the gains and the command line's parser, which all read
them; imports no other module of lodestar and no JAX.
"""

from __future__ import annotations

import re

# A real number in a measure's parameters, as trec_eval's C parser reads one:
# ASCII digits only (Python's float() also takes other scripts' digits and
# underscores). The command line's parser and GainTable.parse share it.
REAL_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

LARGEST_WHOLE_NUMBER = 2**63 - 1
"""The largest cut-off or gain level a measure's parameters take.

trec_eval reads them as C longs (``atol``), which stop here, and lodestar's
relevance is int64: a larger one is refused rather than read as another.
"""


def past_largest(digits: str) -> bool:
    """Whether the ASCII digits ``digits`` stand for a number past :data:`LARGEST_WHOLE_NUMBER`.

    Read without ``int()`` when they are too many to matter: Python refuses to
    convert more than 4,300 digits.
    """
    significant = digits.lstrip("0")
    return len(significant) > len(str(LARGEST_WHOLE_NUMBER)) or int(digits) > LARGEST_WHOLE_NUMBER
