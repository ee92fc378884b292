"""Exact metrics against one sort, scikit-learn and Rax: ``lodestar bench``.

The benchmark lives in the package (``src/lodestar/_bench.py``, which documents
what is measured) so that ``lodestar bench`` runs it from any installation;
this script keeps ``python benchmarks/bench_exact.py [options]`` working, as CI
runs every ``benchmarks/bench_*.py`` with ``--quick``.
"""

import sys

from lodestar import _bench

if __name__ == "__main__":
    sys.exit(_bench.main(sys.argv[1:]))
