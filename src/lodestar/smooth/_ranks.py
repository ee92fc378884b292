"""Soft ranks, the relaxation every smooth measure reads."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _lists, _soft_ranks
from lodestar.smooth import _common


@functools.partial(jax.jit, static_argnames=("method",))
def _ranks_kernel(scores, where, temperature, *, method):
    """Soft ranks; see :func:`ranks`. Inputs already validated."""
    valid = _lists.valid(scores, where)
    dtype = _lists.compute_dtype(scores)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape, dtype)
    s = jnp.where(valid, scores.astype(dtype), 0)
    r = _soft_ranks.soft_ranks(s, valid, jnp.asarray(temperature, dtype), method)
    # A non-finite score gives every real item of its list NaN, whatever the method.
    return _lists.nan_rule(
        r, scores, jnp.zeros(scores.shape, jnp.int8), where, s, options=(temperature,)
    )


def ranks(
    scores: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch n"]:
    r"""Soft 1-based ranks: a differentiable relaxation of the descending rank.

    The hard rank of item :math:`i` is its 1-based position when the real
    items are sorted by descending score. With :math:`m` real items, each
    method gives a smooth :math:`r_i \in [1, m]`:

    .. math::

        \text{sigmoid:}\quad r_i = 1 + \sum_{j \ne i} \sigma\!\left(\frac{s_j - s_i}{T}\right)

        \text{neuralsort, softsort:}\quad
            r_i = \frac{\sum_{p=1}^m p\, \hat P_{pi}}{\sum_{p=1}^m \hat P_{pi}},\quad
            \hat P_{p\cdot} = \operatorname{softmax}\!\left(\frac{(m + 1 - 2p)\, s
                - A_s \mathbf 1}{T}\right) \text{ or }
            \operatorname{softmax}\!\left(-\frac{|s_{[p]} - s|}{T}\right)

        \text{permutahedron:}\quad r = \operatorname*{arg\,min}_{y \in
            \mathcal P(m, m-1, \dots, 1)} \left\lVert y + \frac{s}{T} \right\rVert^2

    where :math:`A_s = (|s_i - s_j|)_{ij}`, :math:`s_{[p]}` is the
    :math:`p`-th largest score and :math:`\mathcal P(w)` is the permutahedron
    (the convex hull of the permutations of :math:`w`). The relaxed
    permutation matrix :math:`\hat P` of NeuralSort and SoftSort is only
    row-stochastic, so its transpose applied to the positions is normalised by
    the column sums, which keeps :math:`r_i` a mean position. The permutahedron
    projection is the "quadratic" soft rank :math:`r_{\varepsilon Q}` of
    Blondel et al. with :math:`\varepsilon = T`, computed by sorting and
    isotonic regression (pool adjacent violators) in :math:`O(n \log n)` with
    a closed-form backward pass.

    As :math:`T \to 0` every method tends to the hard ranks on tie-free
    scores. Tied scores get equal soft ranks (sigmoid, softsort,
    permutahedron average them).

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``.
      where: ``(..., n)`` boolean mask; False marks padding, which gets rank 0.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        each item is then ranked within its own list. See *Packed lists* in
        the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(..., n)`` soft ranks, floating (half precision widened to float32).
      Under ``jit``, every real item of a list holding a NaN or infinite
      score gets NaN, whatever the method.

    Raises:
      InvalidParameterError: ``temperature`` is not a float in (0, inf), or
        is below the smallest normal number of the compute dtype;
        ``method`` is unknown.
      ValueError: ``scores`` is a scalar; ``where`` is not a boolean array of the
        same shape; on concrete inputs, a real item holds NaN or infinity.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import smooth
      >>> scores = jnp.array([0.1, 0.9, 0.5])
      >>> smooth.ranks(scores, temperature=1e-3, method="permutahedron").tolist()
      [3.0, 1.0, 2.0]
      >>> smooth.ranks(jnp.array([1.0, 1.0]), method="permutahedron").tolist()
      [1.5, 1.5]

    References:
      Qin, Liu & Li, Information Retrieval 13(4), 2010.
      https://doi.org/10.1007/s10791-009-9124-x

      Grover et al., ICLR 2019. https://arxiv.org/abs/1903.08850

      Prillo & Eisenschlos, ICML 2020. https://arxiv.org/abs/2006.16038

      Blondel et al., ICML 2020. https://arxiv.org/abs/2002.08871
    """
    temperature, method = _common.check_options(temperature, method, caller="ranks")
    lists = _lists.prepare(
        scores,
        jnp.zeros(jnp.shape(scores), jnp.int8),
        where,
        caller="ranks",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    return lists.per_item(_ranks_kernel(lists.scores, lists.where, temperature, method=method))
