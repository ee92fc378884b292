"""Smooth precision, recall, AP, ERR, RBP and R-precision, from their rank-sum declarations.

Precision, recall, AP and ERR are declared in :mod:`lodestar.metrics`, beside
the exact formulas they equal at hard ranks. RBP and R-precision are declared
here: their exact functions compute them otherwise (positional weights over
tie blocks; the expected count before a per-list cut-off), and the
declarations serve the smooth functions. The registry names each one
(``Measure.rank_sum_path``).
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _lists, _rank_sums, _registry, _validation
from lodestar.metrics import _r_precision
from lodestar.smooth import _common


def _relevant(items: _rank_sums.Items, view: _rank_sums.RankView):
    return items.relevant().astype(items.dtype)


def _top_grade(items: _rank_sums.Items):
    """``(...)`` each list's ``max_label`` (one for all or one per list), or its top label."""
    top = items.options.get("max_label")
    if top is None:
        return jnp.max(items.labels, axis=-1, initial=0)  # padding's labels are 0
    return jnp.broadcast_to(jnp.asarray(top, items.dtype), items.labels.shape[:-1])


def _rank_biased_gain(items: _rank_sums.Items, view: _rank_sums.RankView):
    # (1 - p) p^(r - 1) times the gain, the label over max(max_label, 1) as
    # lodestar.metrics.rank_biased_precision (and trec_eval) rescales it.
    p = jnp.asarray(items.options["p"], items.dtype)
    gains = items.labels / jnp.maximum(_top_grade(items), 1)[..., None]
    return (1 - p) * gains * p ** (view.rank - 1)


def _above_top_grade(items: _rank_sums.Items):
    if items.options.get("max_label") is None:
        return jnp.zeros(items.labels.shape[:-1], bool)
    return jnp.any(items.valid & (items.labels > _top_grade(items)[..., None]), axis=-1)


def _r_cutoff(items: _rank_sums.Items):
    # trec_eval's (long) (multiple R + 0.9), as lodestar.metrics.r_precision.
    return _r_precision.rank_cutoff(items.options["multiple"], items.relevant_total())


# RBP as a rank sum: u_i = (1 - p) p^(r_i - 1) g_i, with no normaliser.
RANK_BIASED_PRECISION_SUM = _rank_sums.RankSum(
    "rank_biased_precision", _rank_biased_gain, refused=_above_top_grade
)
# R-precision as a rank sum: u_i = [relevant i] over the cut-off c = R (or its
# multiple), which is also where the list is cut: see CUT_AT_NORMALISER.
R_PRECISION_SUM = _rank_sums.RankSum("r_precision", _relevant, _r_cutoff)

CUT_AT_NORMALISER = frozenset({"Rprec"})
r"""The registry keys of the rank sums cut, per list, at their normaliser.

R-precision is precision at :math:`c` over :math:`c`, with :math:`c` from
each list's relevant count: its view is cut at :math:`\min(c, k)`.
"""


@functools.partial(
    jax.jit,
    static_argnames=(
        "measure",
        "method",
        "cut",
        "cut_at_normaliser",
        "static",
        "nonnegative_labels",
    ),
)
def _rank_sum_kernel(
    scores,
    labels,
    where,
    temperature,
    k,
    cutoff,
    num_relevant,
    traced,
    *,
    measure,
    method,
    cut,
    cut_at_normaliser,
    static,
    nonnegative_labels,
):
    """Per-list smooth value of a declared rank sum. Inputs already validated.

    ``k`` is the cut-off clipped to the list length and ``cutoff`` the one
    asked for (both the length when ``cut`` is False); ``traced`` and
    ``static`` are the measure's options. ``cut_at_normaliser``: the view is
    cut at the smaller of ``k`` and the normaliser (:data:`CUT_AT_NORMALISER`).
    """
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    temperature = jnp.asarray(temperature, dtype)
    items = _rank_sums.Items(
        y, valid, {**dict(static), **traced}, num_relevant, cutoff if cut else None
    )
    if cut_at_normaliser:
        assert measure.normaliser is not None
        k = jnp.minimum(measure.normaliser(items), k)
    view = _rank_sums.SoftView(s, valid, temperature, method, k, cut=cut or cut_at_normaliser)
    value = _rank_sums.evaluate_rank_sum(measure, items, view)
    # What the concrete checks refuse beyond the shared ones gives NaN, with a
    # NaN gradient: a label the measure refuses, or too small a num_relevant.
    bad = jnp.zeros(value.shape, bool)
    if measure.refused is not None:
        bad = measure.refused(items)
    if num_relevant is not None:
        bad = bad | (num_relevant < jnp.sum(items.relevant(), axis=-1))
    value = _validation.nan_with_nan_gradient(value, bad, s, valid)
    return _lists.nan_rule(
        value,
        scores,
        labels,
        where,
        s,
        nonnegative_labels=nonnegative_labels,
        options=(temperature,),
    )


def _check_num_relevant_covers(num_relevant, lists, *, caller):
    """Refuse a ``num_relevant`` below a list's own relevant items, as the exact measures do."""
    xp = _validation.host_numpy(num_relevant, lists.labels, lists.where)
    labels = xp.asarray(lists.labels)
    real = xp.ones(labels.shape, bool) if lists.where is None else xp.asarray(lists.where)
    own = xp.sum(real & (labels != 0), axis=-1)
    _validation.refuse_if(
        xp.any(xp.asarray(num_relevant) < own),
        f"{caller} got num_relevant below the number of relevant items in a list; "
        f"it counts every relevant item of the list, retrieved or not.",
    )


def _smooth_rank_sum(
    key,
    scores,
    labels,
    *,
    caller,
    temperature,
    method,
    k,
    where,
    segments,
    max_segments,
    max_segment_size,
    num_relevant=None,
    options=None,
):
    """The path of a smooth measure declared as a rank sum: validate, lay out, evaluate."""
    measure = _registry.MEASURES[key]
    rank_sum = measure.rank_sum
    assert rank_sum is not None, f"{key} is not declared as a rank sum"
    temperature, method = _common.check_options(temperature, method, caller=caller)
    k = _validation.check_k(k, caller=caller)
    num_relevant = _validation.check_num_relevant(
        num_relevant, scores, segments, max_segments, caller=caller
    )
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller=caller,
        nonnegative_labels=measure.nonnegative_labels,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    if num_relevant is not None:
        _check_num_relevant_covers(num_relevant, lists, caller=caller)
    n = lists.scores.shape[-1]
    value = _rank_sum_kernel(
        lists.scores,
        lists.labels,
        lists.where,
        temperature,
        _common.cutoff(k, n),
        n if k is None else k,
        num_relevant,
        options or {},
        measure=rank_sum,
        method=method,
        cut=k is not None,
        cut_at_normaliser=key in CUT_AT_NORMALISER,
        static=(),
        nonnegative_labels=measure.nonnegative_labels,
    )
    return lists.per_list(value)


def precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth precision at ``k``: the soft share of the first ``k`` positions that are relevant.

    .. math::

        \widetilde{\mathrm{P}}\mathrm{@k} = \frac{1}{k} \sum_{i\,:\,\ell_i \ne 0} c_i,
        \qquad c_i = \sigma\!\left(\frac{s_i - t_k}{T}\right)

    where :math:`c_i` is the soft cut-off of :func:`dcg` (:math:`t_k` the
    midpoint of the ``k``-th and ``(k+1)``-th largest real scores). The
    denominator is ``k`` itself, as in :func:`lodestar.metrics.precision`,
    even past the end of a short list; without ``k`` it is the number of real
    items, and the value (the share of the list that is relevant) does not
    depend on the scores. Precision reads no rank but whether an item is in
    the top ``k``, so ``method`` changes nothing. On tie-free scores it tends
    to :func:`lodestar.metrics.precision` as :math:`T \to 0`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. Precision does not read it.
      k: The number of positions, with a soft cut-off; also the denominator.
        None scores the whole list over its number of real items.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth precision of each list, in [0, 1]; 0 for a list with no
      real item; under ``jit``, NaN for a list with a value refused on
      concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN, infinity or a negative label.

    Example:
      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.precision(scores, labels, k=2):.4f}")
      0.5000
      >>> print(f"{smooth.precision(scores, labels, k=2, temperature=0.01):.4f}")
      0.5000
      >>> grad = jax.grad(smooth.precision)(scores, labels, k=2, temperature=0.1)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third, lower the second
      True

    Remarks:
      Rax's ``approx_t12n(precision_metric)`` divides by the soft number of
      items retrieved, :math:`\sum_i c_i`, rather than by ``k``, and places
      its soft cut-off at the midpoint of the ``k``-th and ``(k+1)``-th soft
      *ranks* (in rank units) rather than of the scores. With the same cut-off
      the two differ by the factor :math:`\sum_i c_i / k`
      (``docs/equivalence.md``).

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    return _smooth_rank_sum(
        "P",
        scores,
        labels,
        caller="precision",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


def recall(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth recall at ``k``: the soft share of the relevant items within the first ``k``.

    .. math::

        \widetilde{\mathrm{R}}\mathrm{@k} = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0} c_i,
        \qquad c_i = \sigma\!\left(\frac{s_i - t_k}{T}\right)

    with the soft cut-off :math:`c_i` of :func:`dcg`, and :math:`R` the number
    of relevant real items in the list, or ``num_relevant``, as in
    :func:`lodestar.metrics.recall`. Without ``k`` the value is 1 whenever an
    item is relevant, whatever the scores. Recall reads no rank, so
    ``method`` changes nothing. On tie-free scores it tends to
    :func:`lodestar.metrics.recall` as :math:`T \to 0`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. Recall does not read it.
      k: The number of positions, with a soft cut-off. None, or a ``k`` past
        ``n``, looks at the whole list.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth recall of each list, in [0, 1]; 0 for a list with no
      relevant or no real item; under ``jit``, NaN for a list with a value
      refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.recall(scores, labels, k=2):.4f}")
      0.5000
      >>> print(f"{smooth.recall(scores, labels, k=2, temperature=0.01):.4f}")
      0.5000

    Remarks:
      Rax's ``approx_t12n(recall_metric)`` is the same sum over the relevant
      items of the list, but with its soft cut-off at the midpoint of the
      soft *ranks* ``k`` and ``k + 1`` (in rank units) rather than of the
      scores; with the same cut-off the two agree (``docs/equivalence.md``).

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    return _smooth_rank_sum(
        "recall",
        scores,
        labels,
        caller="recall",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


def average_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth average precision at ``k`` (ApproxAP of Qin, Liu & Li 2010).

    .. math::

        \widetilde{\mathrm{AP}}\mathrm{@k} = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0}
            c_i\, \frac{\rho_i}{r_i}

    where :math:`r_i` is the soft rank of :func:`ranks`, :math:`c_i` the soft
    cut-off of :func:`dcg`, :math:`R` the number of relevant real items (or
    ``num_relevant``), and :math:`\rho_i` the soft rank of item :math:`i`
    among the relevant items alone, by the same method: the soft count of
    relevant items at or above it. With the sigmoid method that is ApproxAP's

    .. math::

        \rho_i = 1 + \sum_{j \ne i,\ \ell_j \ne 0}
            \sigma\!\left(\frac{s_j - s_i}{T}\right).

    The exact AP@k is :math:`\frac{1}{R} \sum_{i\,:\,\ell_i \ne 0,\ p_i \le k}
    \mathrm{P@}p_i` with :math:`\mathrm{P@}p_i = (1 + \#\{\text{relevant
    above } i\}) / p_i`; on tie-free scores the soft ranks tend to the hard
    ones, so the value tends to :func:`lodestar.metrics.average_precision` as
    :math:`T \to 0`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. It gives both :math:`r_i` and
        :math:`\rho_i`.
      k: Only relevant items within the first ``k`` positions contribute
        (a soft cut-off); the denominator stays :math:`R`. None, or a ``k``
        past ``n``, looks at the whole list.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth average precision of each list, in [0, 1]; 0 for a list
      with no relevant or no real item; under ``jit``, NaN for a list with a
      value refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Relevant items at ranks 1 and 3 give (1/1 + 2/3) / 2:

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.average_precision(scores, labels):.4f}")
      0.8333
      >>> print(f"{smooth.average_precision(scores, labels, temperature=0.01):.4f}")
      0.8333
      >>> grad = jax.grad(smooth.average_precision)(scores, labels, temperature=0.1)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third above the second
      True

    Remarks:
      Rax's ``approx_t12n(ap_metric)`` counts the relevant items at or above
      item :math:`i` by comparing soft ranks, :math:`[r_j \le r_i]`, a step
      that passes no gradient; lodestar's :math:`\rho_i` is smooth, so a
      relevant item also learns from the relevant items around it. The two
      agree when each list holds one relevant item, and, without ``k``, Rax
      takes no cut-off either (``docs/equivalence.md``).

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x

      Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR
      2000. https://doi.org/10.1145/345508.345543
    """
    return _smooth_rank_sum(
        "map",
        scores,
        labels,
        caller="average_precision",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


def err(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    max_label: float,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth expected reciprocal rank (Chapelle et al., 2009).

    The user of ERR reads down the list and stops at an item of grade
    :math:`g` with probability :math:`R(g) = (2^g - 1) / 2^{g_{\max}}`; ERR is
    the expected reciprocal of the rank where they stop. The smooth version
    replaces the rank by the soft rank :math:`r_i` of :func:`ranks` and "the
    items above :math:`i`" by sigmoid weights, in log space:

    .. math::

        \widetilde{\mathrm{ERR}}\mathrm{@k} = \sum_i c_i\, \frac{R_i}{r_i}
            \exp\Bigl(\sum_{j \ne i} \sigma\!\left(\frac{s_j - s_i}{T}\right)
            \log(1 - R_j)\Bigr)

    with the soft cut-off :math:`c_i` of :func:`dcg`. As :math:`T \to 0` on
    tie-free scores, the sigmoid weights tend to 1 for the items above
    :math:`i` and to 0 for those below, the exponential to
    :math:`\prod_{j\ \mathrm{above}\ i} (1 - R_j)`, and the value to
    :func:`lodestar.metrics.err`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` grades :math:`g`, in ``[0, max_label]``.
      max_label: :math:`g_{\max}`, the top grade of the judgement scale, in
        (0, inf); required, as in :func:`lodestar.metrics.err`.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank :math:`r_i`: ``"sigmoid"``, ``"neuralsort"``,
        ``"softsort"`` or ``"permutahedron"``; see :func:`ranks`. The sum over
        the items above is the pairwise sigmoid whatever the method, as the
        soft cut-off is.
      k: Score only the first ``k`` positions, with a soft cut-off. None, or a
        ``k`` past ``n``, scores the whole list.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth ERR of each list, in [0, 1); 0 for a list with no item
      of positive grade or no real item; under ``jit``, NaN for a list with a
      value refused on concrete inputs, a grade above ``max_label`` among
      them.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1; ``max_label`` is not a real
        number in (0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, a negative label, or a label above
        ``max_label``.

    Example:
      Grades 4 and 2 on a 0–4 scale: 15/16 + (1/16) (3/16) / 2.

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5])
      >>> labels = jnp.array([4, 2])
      >>> print(f"{metrics.err(scores, labels, max_label=4):.6f}")
      0.943359
      >>> print(f"{smooth.err(scores, labels, max_label=4, temperature=0.01):.6f}")
      0.943359
      >>> grad = jax.grad(smooth.err)(scores, labels, max_label=4, temperature=0.5)
      >>> bool(grad[0] > 0 > grad[1])
      True

    Remarks:
      The product over the items above is taken in log space and weighted by
      the sigmoid of the score differences, not built from the soft ranks, so
      that tied items reach each other with weight 1/2 and every item above
      :math:`i` passes gradient. Its cost is that of the sigmoid soft ranks,
      O(n^2) time, with memory linear in ``n`` from 512 items on, whatever
      the method. Rax has no ERR.

    References:
      Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for graded
      relevance", CIKM 2009. https://doi.org/10.1145/1645953.1646033

      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    max_label = _validation.check_positive_float(max_label, name="max_label", caller="err")
    scores, labels, where = _validation.check_lists(scores, labels, where, caller="err")
    _validation.check_labels_at_most(labels, where, max_label, name="max_label", caller="err")
    return _smooth_rank_sum(
        "err",
        scores,
        labels,
        caller="err",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"max_label": max_label},
    )


def rank_biased_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    p: float = 0.9,
    max_label: float | Num[Array, "*batch"] | None = None,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth rank-biased precision (Moffat & Zobel, 2008).

    .. math::

        \widetilde{\mathrm{RBP}}\mathrm{@k} = (1 - p) \sum_i c_i\, g_i\, p^{r_i - 1}

    with :math:`r_i` the soft rank of :func:`ranks`, :math:`c_i` the soft
    cut-off of :func:`dcg`, and the gain :math:`g_i` the label over
    ``max(max_label, 1)``, as in :func:`lodestar.metrics.rank_biased_precision`.
    :math:`p^{r - 1}` is smooth in the rank, so every item receives gradient,
    the more the nearer the top; on tie-free scores the value tends to the
    exact RBP as :math:`T \to 0`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative, at most ``max_label``.
      p: The persistence, in (0, 1).
      max_label: The top grade, a float or a ``(...)`` array with one per list
        (for packed lists ``(..., max_segments)``), non-negative; None takes
        each list's largest label.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`.
      k: Only the first ``k`` positions are read, with a soft cut-off. None,
        or a ``k`` past ``n``, reads the whole list.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth RBP of each list, in [0, 1); 0 for a list with no
      positive label or no real item; under ``jit``, NaN for a list with a
      value refused on concrete inputs, a label above its ``max_label`` among
      them.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1; ``p`` is not a real number in
        (0, 1); ``max_label`` is a negative or non-finite float.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``max_label`` is
        an array of the wrong shape or, on concrete inputs, holds a negative
        or non-finite value; on concrete inputs, a real item holds NaN or
        infinity, a negative label, or a label above its ``max_label``.

    Example:
      Relevant items at positions 1 and 3 with ``p=0.5``: :math:`0.5 (1 + 0.25)`.

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 1])
      >>> print(f"{metrics.rank_biased_precision(scores, labels, p=0.5):.4f}")
      0.6250
      >>> print(f"{smooth.rank_biased_precision(scores, labels, p=0.5, temperature=0.01):.4f}")
      0.6250
      >>> grad = jax.grad(smooth.rank_biased_precision)(scores, labels, temperature=0.5)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third above the second
      True

    References:
      Moffat & Zobel, "Rank-biased precision for measurement of retrieval
      effectiveness", ACM TOIS 27(1), 2008. https://doi.org/10.1145/1416950.1416952

      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    caller = "rank_biased_precision"
    p = _validation.check_float_in_range(
        p, name="p", caller=caller, low=0.0, high=1.0, closed="neither"
    )
    if isinstance(max_label, numbers.Real):
        max_label = _validation.check_float_in_range(
            max_label, name="max_label", caller=caller, low=0.0, high=float("inf"), closed="left"
        )
    elif max_label is not None:
        max_label = _validation.check_per_list_values(
            max_label, scores, segments, max_segments, name="max_label", caller=caller
        )
    value = _smooth_rank_sum(
        "rbp",
        scores,
        labels,
        caller=caller,
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"p": p, "max_label": max_label},
    )
    # Concrete NaN scores and labels were refused above, so a NaN left in a
    # concrete result is a label above its max_label.
    if _validation.is_concrete(value) and bool(np.isnan(np.asarray(value)).any()):
        raise ValueError(f"Input labels contains a value greater than max_label in {caller}.")
    return value


def r_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    multiple: float = 1.0,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth R-precision: the soft share of the first :math:`c` positions that are relevant.

    .. math::

        \widetilde{\mathrm{Rprec}} = \frac{1}{c} \sum_{i\,:\,\ell_i \ne 0} c_i,
        \qquad c_i = \sigma\!\left(\frac{s_i - t_{\min(c, k)}}{T}\right)

    with :math:`c = \lfloor \mathrm{multiple} \cdot R + 0.9 \rfloor` for the
    :math:`R` relevant items of the list (or ``num_relevant``), as in
    :func:`lodestar.metrics.r_precision`, and :math:`c_i` the soft cut-off of
    :func:`dcg` placed, per list, at the midpoint of the
    :math:`\min(c, k)`-th and next largest real scores. :math:`c = 0` scores
    0. R-precision reads no rank but whether an item is within the cut-off,
    so ``method`` changes nothing. On tie-free scores it tends to the exact
    R-precision as :math:`T \to 0`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      multiple: The multiple of :math:`R` to cut at, in (0, inf).
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. R-precision does not read it.
      k: Only the first ``k`` positions are retrieved; the denominator stays
        :math:`c`. None, or a ``k`` past ``n``, looks at the whole list.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth R-precision of each list, in [0, 1]; 0 for a list with
      no relevant or no real item; under ``jit``, NaN for a list with a value
      refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1; ``multiple`` is not a real
        number in (0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Two relevant items, one of them in the first two positions:

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.r_precision(scores, labels):.4f}")
      0.5000
      >>> print(f"{smooth.r_precision(scores, labels, temperature=0.01):.4f}")
      0.5000
      >>> grad = jax.grad(smooth.r_precision)(scores, labels, temperature=0.1)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third above the second
      True

    References:
      Buckley & Voorhees, "Retrieval system evaluation", in TREC: Experiment
      and Evaluation in Information Retrieval, MIT Press, 2005.

      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    caller = "r_precision"
    multiple = _validation.check_positive_float(multiple, name="multiple", caller=caller)
    return _smooth_rank_sum(
        "Rprec",
        scores,
        labels,
        caller=caller,
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
        options={"multiple": multiple},
    )
