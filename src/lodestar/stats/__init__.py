r"""Significance tests for comparing retrieval systems on the same queries.

"Is run B really better than run A?" Every test here works on **per-query
scores**, one value per query for each run, over the same queries in the same
order, however they were computed (``lodestar evaluate``, trec_eval, or
anything else):

* :func:`paired_t_test`: Student's paired t-test, with Cohen's d_z;
* :func:`randomization_test`: Fisher's paired randomization (sign-flip) test
  on the mean difference, exact when every sign flip can be enumerated;
* :func:`bootstrap_test`: the paired bootstrap test (studentised, shift
  method) and a percentile confidence interval for the mean difference;
* :func:`holm` and :func:`bonferroni`: family-wise corrections of p-values;
* :func:`compare_scores`: every pair of several runs on several measures,
  corrected per measure, as a :class:`Comparison` that renders the
  superscript table of papers (plain text, Markdown or LaTeX).

>>> import numpy as np
>>> from lodestar import stats
>>> a = np.array([0.61, 0.42, 0.75, 0.33, 0.58, 0.49, 0.66, 0.71])
>>> b = np.array([0.55, 0.40, 0.62, 0.35, 0.51, 0.41, 0.60, 0.63])
>>> result = stats.paired_t_test(a, b)
>>> print(f"t = {float(result.statistic):.3f}, p = {float(result.p_value):.4f}")
t = 3.822, p = 0.0065

**Shapes.** ``a`` and ``b`` have shape ``(..., n)``: ``n`` queries along the
last axis, and any leading axes are separate comparisons (pairs of runs,
measures) tested at once. The randomization and bootstrap tests draw one set
of sign flips or resamples for the whole batch, and it depends only on the
seed and ``n``, so a pair's p-value is the same whether it is tested alone or
with others.

**Precision.** Every test and correction computes in float64 and returns
float64 whatever ``jax_enable_x64`` says, because p-values near a threshold,
p-values far below float32's range and exactly tied statistics need it
(decision 0014 records the measurements): in float32, Bonferroni's
``3 * 0.0166666667`` is 0.05 and passes ``alpha = 0.05``. Eager calls return
NumPy float64 values (int64 counts), scalars for a single comparison, so a
p-value of 1e-230 is not rounded to 0 on the way out. A JAX array given as
input holds what it holds: made with x64 off it is float32, and its values
are corrected as they are, in float64. The functions are pure and work under
:func:`jax.jit`, with ``permutations`` and ``samples`` static, and then
return JAX float64 arrays: they need x64 on while they are traced (globally,
or ``with jax.enable_x64(True):`` around the jitted call), and say so rather
than compile in float32. Values are checked on concrete inputs only, as
everywhere in lodestar.

**Degenerate inputs.** When every difference ``a - b`` of a comparison is 0,
no test has evidence of a difference: the statistic and effect size are 0
and the p-value is 1 (scipy's ``ttest_rel`` gives NaN there). When every
difference is the same non-zero value, the standard deviation is exactly 0:
t and d_z are infinite and the t-test's p-value is 0, as scipy gives when its
variance rounds to 0.

``docs/decisions/0014-significance-tests.md`` records the conventions.
"""

from lodestar.stats._corrections import bonferroni as bonferroni
from lodestar.stats._corrections import holm as holm
from lodestar.stats._report import Comparison as Comparison
from lodestar.stats._report import compare_scores as compare_scores
from lodestar.stats._tests import BootstrapResult as BootstrapResult
from lodestar.stats._tests import RandomizationResult as RandomizationResult
from lodestar.stats._tests import TTestResult as TTestResult
from lodestar.stats._tests import bootstrap_test as bootstrap_test
from lodestar.stats._tests import paired_t_test as paired_t_test
from lodestar.stats._tests import randomization_test as randomization_test

__all__ = [
    "BootstrapResult",
    "Comparison",
    "RandomizationResult",
    "TTestResult",
    "bonferroni",
    "bootstrap_test",
    "compare_scores",
    "holm",
    "paired_t_test",
    "randomization_test",
]
