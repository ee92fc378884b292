"""Helpers shared by the benchmark scripts in this folder.

The scripts are run as ``python benchmarks/bench_<name>.py``; Python puts the
script's own folder first on ``sys.path``, so ``import _common`` finds this
module without installing anything. The helpers themselves live in
``lodestar._bench``, which ``lodestar bench`` runs, so they exist once.
"""

from lodestar._bench import base_parser as base_parser
from lodestar._bench import default_reps as default_reps
from lodestar._bench import fmt_ms as fmt_ms
from lodestar._bench import fmt_ratio as fmt_ratio
from lodestar._bench import import_rax as import_rax
from lodestar._bench import machine_info as machine_info
from lodestar._bench import optional_import as optional_import
from lodestar._bench import print_header as print_header
from lodestar._bench import print_mismatches as print_mismatches
from lodestar._bench import resolved_method as resolved_method
from lodestar._bench import rows_by_shape as rows_by_shape
from lodestar._bench import save_json as save_json
from lodestar._bench import time_jax as time_jax
from lodestar._bench import version as version
from lodestar._bench import warm_up_process as warm_up_process
