"""Metric-to-loss transformations: a smooth measure as a loss, and Gumbel-perturbed scores."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _lists, _soft_ranks, _validation, metrics, smooth
from lodestar.losses import _common


def _smooth_counterpart(metric, *, caller: str) -> Callable:
    """The function of :mod:`lodestar.smooth` named as ``metric``, if ``metric`` is that measure."""
    counterparts = sorted(name for name in smooth.__all__ if name in metrics.__all__)
    name = getattr(metric, "__name__", None)
    if name in counterparts and getattr(metrics, name) is metric:
        return getattr(smooth, name)
    listed = ", ".join(f"metrics.{name}" for name in counterparts)
    raise _validation.InvalidParameterError(
        f"The 'metric' parameter of {caller} must be a measure of lodestar.metrics with a "
        f"smooth counterpart, one of {{{listed}}}. Got {metric!r} instead."
    )


def _reduce_per_list(values, scores, labels, where, weights, reduction, options, *, caller):
    """Weight the per-list ``values`` and reduce them as every loss does.

    ``"mean"`` counts the lists with a real item, read from the same layout the
    smooth function used (``options`` carries its packing keywords).
    """
    reduction = _validation.check_option(
        reduction, name="reduction", options=_common.REDUCTIONS, caller=caller
    )
    list_weights, _ = _lists.check_weights(weights, values.shape, caller=caller)
    valid = None
    if reduction == "mean":
        packing = ("segments", "max_segments", "max_segment_size")
        lists = _lists.prepare(
            scores,
            labels,
            where,
            caller=caller,
            **{name: options[name] for name in packing if name in options},
        )
        valid = _lists.valid(lists.scores, lists.where)
    return _common.reduce_lists(values, valid, list_weights, reduction)


def approx_t12n(
    metric: Callable,
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
) -> Callable[..., Array]:
    r"""A measure of :mod:`lodestar.metrics` as a loss: minus its smooth counterpart.

    The returned function is ``loss(scores, labels, *, where=None,
    weights=None, reduction="mean", **options)``: the function of
    :mod:`lodestar.smooth` of the same name as ``metric``, at ``temperature``
    and ``method``, **negated**, so that minimising the loss maximises the
    measure, as Rax's ``approx_t12n`` returns it; ``options`` (``k``,
    ``gain``, ``max_label``, ``num_relevant``, ``segments`` ...) go to the
    smooth function unchanged. The per-list values are weighted by ``weights``
    (one per list) and reduced as every loss of :mod:`lodestar.losses` is:
    ``"mean"`` over the lists with a real item, ``"sum"``, or ``"none"``.

    The smooth functions already are the approximations Qin, Liu & Li (2010)
    build and Rax's ``approx_t12n`` assembles from a measure: soft ranks in
    place of the ranks and a sigmoid soft cut-off in place of the top-``k``
    indicator, in memory linear in the list length (decision 0030). Where the
    definitions coincide the values are Rax's (``docs/equivalence.md``);
    lodestar's linear default gain is the one difference to mind, so pass
    ``gain="exp2"`` for Rax's :math:`2^\ell - 1`.

    Args:
      metric: The exact measure, a function of :mod:`lodestar.metrics` with a
        smooth counterpart: ``metrics.ndcg``, ``metrics.dcg``,
        ``metrics.reciprocal_rank``, ``metrics.precision``,
        ``metrics.recall``, ``metrics.average_precision``, ``metrics.err``,
        ``metrics.hits``, ``metrics.rank_biased_precision`` or
        ``metrics.r_precision``.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"`` (the default, Rax's),
        ``"neuralsort"``, ``"softsort"`` or ``"permutahedron"``; see
        :func:`lodestar.smooth.ranks`.

    Returns:
      The loss: a scalar for ``"mean"`` and ``"sum"``, the ``(...)``
      per-list losses for ``"none"``; each list's loss is minus its smooth
      value.

    Raises:
      InvalidParameterError: ``metric`` has no smooth counterpart;
        ``temperature`` is not in (0, inf) or ``method`` is unknown (when the
        loss is called, as the smooth function checks them), ``reduction`` is
        unknown.
      ValueError: as the smooth function; ``weights`` is not ``(...)`` (one
        per list), or on concrete inputs holds a negative or non-finite value.

    Example:
      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import losses, metrics
      >>> loss = losses.approx_t12n(metrics.ndcg, temperature=0.1)
      >>> scores = jnp.array([[0.0, 1.0, 3.0, 2.0]])
      >>> labels = jnp.array([[0.0, 0.0, 1.0, 2.0]])
      >>> print(f"{loss(scores, labels, gain='exp2'):.4f}")
      -0.7967
      >>> jax.grad(loss)(scores, labels).shape
      (1, 4)

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    caller = "approx_t12n"
    smooth_measure = _smooth_counterpart(metric, caller=caller)
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    method = _validation.check_option(method, name="method", options=smooth.METHODS, caller=caller)
    name = f"approx_{smooth_measure.__name__}_loss"

    def loss(scores, labels, *, where=None, weights=None, reduction="mean", **options):
        values = smooth_measure(
            scores, labels, where=where, temperature=temperature, method=method, **options
        )
        return -_reduce_per_list(
            values, scores, labels, where, weights, reduction, options, caller=name
        )

    loss.__name__ = loss.__qualname__ = name
    loss.__doc__ = (
        f"Minus :func:`lodestar.smooth.{smooth_measure.__name__}` at temperature "
        f"{temperature} by {method!r}, reduced; made by :func:`lodestar.losses.approx_t12n`."
    )
    return loss


# The measures whose value falls when a rank rises, so that an upper bound of
# every rank (and a lower bound of the cut-off) gives a lower bound of them.
_BOUNDED = {"dcg": False, "ndcg": True}


@_common.loss_kernel(nonnegative_labels=True, static_argnames=("cut", "gain", "normalised"))
def _bound_dcg_kernel(s, y, valid, w, k, *, cut, gain, normalised):
    gains = jnp.where(valid, _gains.apply_gain(gain, y) * w, 0)
    if normalised:
        gains = _gains.shares(gains, _gains.ideal_dcg(gains, valid, k=k))
    # Padding has rank 0 and an infinite discount there: evaluate it at 1.
    rank = jnp.where(valid, _soft_ranks.hinge_ranks(s, valid), 1)
    weight = _gains.discount_at(rank, 2.0) * _soft_ranks.top_k_lower_bound(s, valid, k, cut=cut)
    return -jnp.sum(jnp.where(valid, gains * weight, 0), axis=-1)


def bound_t12n(metric: Callable) -> Callable[..., Array]:
    r"""DCG or NDCG as a loss that bounds it: minus the measure at upper bounds of the ranks.

    Rax's ``bound_t12n``: each rank is replaced by the upper bound

    .. math::

        \bar r_i = 1 + \sum_{j \ne i} \max(0,\ 1 + s_j - s_i)
            \ \ge\ r_i,

    and the top-``k`` indicator by the lower bound :math:`\min(1, s_i - t_k)`
    (:math:`t_k` the midpoint of the ``k``-th and ``(k+1)``-th largest real
    scores). With non-negative gains the DCG so computed is at most the exact
    DCG at every order of tied scores, so the loss is at least minus the
    measure, **negated** as Rax returns it: minimising the loss raises a lower
    bound of the measure. The margin is 1 in the units of the scores, with no
    temperature, as in Rax; the bound does not tend to the measure at any
    scale, unlike :func:`approx_t12n`: an item's bound counts each item above
    it as 1 plus its lead, so only the top item's bound can be its rank. A
    pair passes gradient while the lower item is within 1 of the upper, to
    raise the lower item in proportion to its gain's discount slope and lower
    the upper one as much: the more relevant item of a pair gains.

    The returned function is ``loss(scores, labels, *, where=None,
    weights=None, reduction="mean", segments=None, max_segments=None,
    max_segment_size=None, k=None, gain="linear")``, with the options and
    reductions of :func:`approx_ndcg_loss` (``weights`` per list or per item,
    an item's weight scaling its gain) and :mod:`lodestar.metrics`' linear
    default gain; pass ``gain="exp2"`` for Rax's :math:`2^\ell - 1`. The
    pairs are summed in column blocks: memory linear in the list length.

    Args:
      metric: ``metrics.dcg`` or ``metrics.ndcg``: the measures whose value a
        rank's upper bound bounds from below. (Rax's MRR and AP bounds read
        comparisons of bounded ranks that bound nothing.)

    Returns:
      The loss: a scalar for ``"mean"`` and ``"sum"``, the ``(...)`` per-list
      losses for ``"none"``.

    Raises:
      InvalidParameterError: ``metric`` is not ``metrics.dcg`` or
        ``metrics.ndcg``; when the loss is called, ``reduction`` or ``gain``
        is unknown, ``k`` is not None and not an int >= 1.
      ValueError: as :func:`approx_ndcg_loss`.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses, metrics
      >>> loss = losses.bound_t12n(metrics.ndcg)
      >>> scores = jnp.array([0.0, 1.0, 3.0, 2.0])
      >>> labels = jnp.array([0.0, 0.0, 1.0, 2.0])
      >>> bound = -loss(scores, labels, gain="exp2")
      >>> print(f"{bound:.4f} <= {metrics.ndcg(scores, labels, gain='exp2'):.4f}")
      0.6885 <= 0.7967

    References:
      Joachims, "Optimizing search engines using clickthrough data", KDD 2002
      (the hinge bound of a pairwise order).
      https://doi.org/10.1145/775047.775067

      Jagerman, Qin, Wang, Bendersky & Najork, "Rax: composable learning-to-rank
      using JAX", SIGIR 2022. https://doi.org/10.1145/3477495.3531830
    """
    caller = "bound_t12n"
    name = getattr(metric, "__name__", None)
    if name not in _BOUNDED or getattr(metrics, name) is not metric:
        raise _validation.InvalidParameterError(
            f"The 'metric' parameter of {caller} must be a measure of lodestar.metrics "
            f"whose rank bound bounds it, one of {{metrics.dcg, metrics.ndcg}}. "
            f"Got {metric!r} instead."
        )
    normalised = _BOUNDED[name]
    loss_name = f"bound_{name}_loss"

    def loss(
        scores: Num[Array, "*batch n"],
        labels: Num[Array, "*batch n"],
        *,
        where: Bool[Array, "*batch n"] | None = None,
        weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
        reduction: str = "mean",
        segments: Int[Array, "*batch n"] | None = None,
        max_segments: int | None = None,
        max_segment_size: int | None = None,
        k: int | None = None,
        gain: str | Callable = "linear",
    ) -> Float[Array, ""] | Float[Array, "*batch"]:
        k = _validation.check_k(k, caller=loss_name)
        gain = _validation.check_gain(gain, caller=loss_name)
        scores, labels, where, weights, item_weights, reduction = _common.prepare(
            scores,
            labels,
            where,
            weights,
            reduction,
            caller=loss_name,
            nonnegative_labels=True,
            segments=segments,
            max_segments=max_segments,
            max_segment_size=max_segment_size,
            gain=gain,
        )
        n = scores.shape[-1]
        return _bound_dcg_kernel(
            scores,
            labels,
            where,
            weights,
            item_weights,
            n if k is None else min(k, n),
            reduction=reduction,
            cut=k is not None,
            gain=gain,
            normalised=normalised,
        )

    loss.__name__ = loss.__qualname__ = loss_name
    loss.__doc__ = (
        f"Minus {name} at upper bounds of the ranks, reduced; made by "
        ":func:`lodestar.losses.bound_t12n`."
    )
    return loss


def gumbel_t12n(
    fn: Callable,
    *,
    samples: int = 8,
    beta: float = 1.0,
) -> Callable:
    r"""``fn`` averaged over Gumbel-perturbed scores (Bruch et al. 2020).

    The returned function takes ``fn``'s arguments plus a keyword ``key`` (a
    ``jax.random.key`` or ``PRNGKey``) and returns

    .. math::

        \frac{1}{S} \sum_{t=1}^{S} \mathrm{fn}(s + \beta g_t, y, \dots),
        \qquad g_t \sim \mathrm{Gumbel}(0, 1)\ \text{i.i.d. per item},

    a Monte Carlo estimate, with ``samples`` :math:`S` draws, of ``fn``'s
    expected value under perturbed scores: a stochastic ranking policy whose
    loss is smooth in expectation (the Gumbel-max trick samples the
    Plackett-Luce distribution of the scores). ``fn`` is any loss of
    :mod:`lodestar.losses`, a loss of :func:`approx_t12n`, or any function of
    ``(scores, labels, **kwargs)``; ``gumbel_t12n(approx_t12n(metrics.ndcg))``
    is a stochastic ApproxNDCG in one line. If ``fn`` takes a ``key`` of its
    own it gets a fresh one, split from ``key``.

    The noise is drawn as Rax's ``gumbel_t12n`` draws it,
    ``jax.random.gumbel(key, (samples, *scores.shape))``, so with the same key
    the perturbed scores are Rax's. The samples are evaluated one at a time
    (``jax.lax.map``), so the memory is ``fn``'s at one sample plus the
    ``samples`` noise arrays; Rax stacks the samples into one batch. A fixed
    key gives the same value every call; the estimate's spread shrinks as
    :math:`1 / \sqrt{S}`.

    Args:
      fn: The function to average, called as ``fn(scores, labels, **kwargs)``.
      samples: :math:`S`, the number of Gumbel draws, an int >= 1.
      beta: :math:`\beta`, the Gumbel scale, in (0, inf), in the units of the
        scores.

    Returns:
      ``fn_gumbel(scores, labels, *, key, **kwargs)``: the mean of ``fn`` over
      the ``samples`` draws (per list with ``reduction="none"``, where Rax
      returns each draw's values on a new leading axis).

    Raises:
      InvalidParameterError: ``fn`` is not callable; ``samples`` is not an
        int >= 1; ``beta`` is not a real number in (0, inf); when called,
        ``key`` is not one ``jax.random.key`` or ``PRNGKey``.

    Example:
      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import losses, metrics
      >>> loss = losses.gumbel_t12n(losses.approx_t12n(metrics.ndcg), samples=32)
      >>> scores = jnp.array([0.0, 1.0, 3.0, 2.0])
      >>> labels = jnp.array([0.0, 0.0, 1.0, 2.0])
      >>> key = jax.random.key(0)
      >>> bool(loss(scores, labels, key=key) == loss(scores, labels, key=key))
      True
      >>> jax.grad(loss)(scores, labels, key=key).shape
      (4,)

    References:
      Bruch, Han, Bendersky & Najork, "A stochastic treatment of learning to
      rank scoring functions", WSDM 2020. https://doi.org/10.1145/3336191.3371844
    """
    caller = "gumbel_t12n"
    if not callable(fn):
        raise _validation.InvalidParameterError(
            f"The 'fn' parameter of {caller} must be a callable. Got {fn!r} instead."
        )
    samples = _validation.check_int(samples, name="samples", caller=caller, low=1)
    beta = _validation.check_positive_float(beta, name="beta", caller=caller)
    name = f"gumbel_{getattr(fn, '__name__', 'fn')}"
    # As Rax does: a function that draws randomness of its own (ListMLE's tie
    # breaking) gets a key split from the caller's.
    try:
        takes_key = "key" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a callable without a signature: pass no key
        takes_key = False

    def fn_gumbel(scores, labels, *, key, **kwargs):
        key = _common.check_key(key, caller=name)
        if key is None:
            raise _validation.InvalidParameterError(
                f"The 'key' parameter of {name} must be one jax.random.key or one "
                f"jax.random.PRNGKey: it draws the Gumbel noise. Got None instead."
            )
        if takes_key:
            key, inner = jax.random.split(key)
            kwargs = {**kwargs, "key": inner}
        scores = jnp.asarray(scores)
        noise = jax.random.gumbel(key, (samples, *scores.shape), jnp.result_type(scores, float))

        def one(g):
            return fn(scores + beta * g, labels, **kwargs)

        # Checkpointed: the gradient recomputes each sample's loss from its
        # noise instead of holding every sample's intermediates at once.
        return jnp.mean(jax.lax.map(jax.checkpoint(one), noise), axis=0)

    fn_gumbel.__name__ = fn_gumbel.__qualname__ = name
    fn_gumbel.__doc__ = (
        f"``{getattr(fn, '__name__', 'fn')}`` averaged over {samples} Gumbel draws of scale "
        f"{beta}; made by :func:`lodestar.losses.gumbel_t12n`."
    )
    return fn_gumbel
