"""Ctrl-C in the ``lodestar`` program: one KeyboardInterrupt, raised where it is safe, never lost.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread
is, and three places misbehave (decision 0033):

- inside an import: a KeyboardInterrupt raised while jaxlib's MLIR bindings
  set themselves up aborted the program (SIGABRT) or crashed it (SIGSEGV);
- inside a finaliser or a garbage-collector callback (JAX's
  ``_xla_gc_callback``): the interpreter prints and swallows it, and the work
  goes on;
- while the program reports the interrupt: a second KeyboardInterrupt there
  escapes as a traceback, and the process dies by SIGINT instead of exiting
  130.

:func:`install` puts :func:`note_interrupt` in its place. The interrupt is
remembered; inside an import it is tried again every :data:`RETRY_SECONDS`
(SIGALRM, repeating until it is raised) until it comes outside one; once
raised, no other is raised (the retry is disarmed, and a further Ctrl-C is
only remembered) unless a
finaliser swallowed it, which :func:`quiet_swallowed_interrupt` sees, or it
has not reached the program's handler :data:`SWALLOWED_SECONDS` later: JAX's
tracing catches every exception in places (a bare ``except:`` around a
pytree's key paths) and went on to compile for 10 s. The handler that
reports it calls :func:`reporting` first. The long loops also call
:func:`raise_if_interrupted` between their steps, for platforms without
SIGALRM.

Some extension modules catch everything while they import their C parts and
raise an ImportError of their own from it (NumPy's "C-extensions failed"):
:func:`caused_by_interrupt` recognises those.
"""

from __future__ import annotations

import signal
import sys

# Not typing's: the handler is installed as soon as this module is imported,
# and importing typing would delay it by 14 ms (decision 0033).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

RETRY_SECONDS = 0.02
"""How often an interrupt that came inside an import, or was swallowed, is tried again."""

SWALLOWED_SECONDS = 0.25
"""How long a raised interrupt may take to reach the program's handler before it is raised again."""

# Ctrl-C came: the program ends with status 130 at the latest at the next check.
_pending = False
# Its KeyboardInterrupt was raised and is on its way up to the program's
# handler: no retry is armed, and no other is raised. A finaliser that
# swallows it clears this (quiet_swallowed_interrupt).
_raised = False
# The program's handler has the interrupt in hand and reports it: no other is
# raised, whatever comes.
_reporting = False
# The code of the functions whose ``except`` reports the interrupt (those that
# called install): while one of them runs its own lines, an interrupt on its
# way there is not raised again.
_handler_codes: set = set()


def install() -> None:
    """Handle Ctrl-C as the program must, unless SIGINT is ignored (a background job) or taken.

    The caller is the program's handler: its ``except`` clause reports the
    interrupt, and starts by calling :func:`reporting`.
    """
    _handler_codes.add(sys._getframe(1).f_code)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, note_interrupt)
        if hasattr(signal, "setitimer"):
            signal.signal(signal.SIGALRM, note_interrupt)
        sys.unraisablehook = quiet_swallowed_interrupt


def caused_by_interrupt(error: BaseException | None) -> bool:
    """Whether ``error`` is a KeyboardInterrupt, or was raised from or during one."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def note_interrupt(signum, frame) -> None:
    """SIGINT's handler, and SIGALRM's while an interrupt waits: raise it once, outside an import.

    Inside an import it is only remembered, and tried again every
    :data:`RETRY_SECONDS`. Once it has been raised, a further Ctrl-C is only
    remembered: raised while the program reports the first, it would escape
    as a traceback.
    """
    global _pending
    if signum != signal.SIGINT and not _pending:
        return  # a retry for an interrupt that has been dealt with since
    _pending = True
    if _reporting:
        return
    if _raised:
        # A further Ctrl-C is only remembered. The retry armed by _raise finds
        # the interrupt not yet in the handler's hands: something caught it and
        # went on, so it is raised again, unless the handler is about to take it.
        if signum == signal.SIGINT:
            return
        if frame is not None and frame.f_code in _handler_codes:
            _arm(SWALLOWED_SECONDS)
            return
    if _inside_import(frame):
        # Raised as soon as the import is over, not at the next check: that
        # can be a whole batch of evaluation later (12 s, on a loaded machine).
        _try_again_soon()
    else:
        _raise()


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if the program was interrupted and the interrupt was swallowed."""
    if _pending and not _reporting:
        _raise()


def quiet_swallowed_interrupt(unraisable) -> None:
    """A ``sys.unraisablehook``: a Ctrl-C that a finaliser swallowed is raised again, untold.

    JAX's ``_xla_gc_callback`` swallowed Ctrl-C while ``-m all_trec`` lowered
    its kernel, and the program went on for the rest of the lowering (8-12 s)
    to the next check: it is tried again :data:`RETRY_SECONDS` later, without
    Python's report of it. Any other unraisable exception is reported as
    Python reports it.
    """
    global _raised
    if _pending and isinstance(unraisable.exc_value, KeyboardInterrupt):
        _raised = False
        _try_again_soon()
        return
    sys.__unraisablehook__(unraisable)


def reporting() -> None:
    """The program's handler has the interrupt: raise no other, and disarm the retry."""
    global _reporting
    _reporting = True
    _arm(0)


def _raise() -> NoReturn:
    """Raise the remembered interrupt, again :data:`SWALLOWED_SECONDS` later if it is caught."""
    global _raised
    _raised = True
    _arm(SWALLOWED_SECONDS)
    raise KeyboardInterrupt


def _try_again_soon() -> None:
    """Try the remembered interrupt again in :data:`RETRY_SECONDS` (where SIGALRM exists)."""
    _arm(RETRY_SECONDS)


def _arm(seconds: float) -> None:
    """SIGALRM every ``seconds`` (0: none) until armed again, where the platform has it.

    Repeating, not once: a retry's signal can be lost to the program. It may
    land on another thread, or on the main thread after its last check for
    signals and before a blocking call (``time.sleep``, a lock's wait), which
    then waits out its whole time: a remembered Ctrl-C came 5 s late once,
    under load. The next signal interrupts that call.
    """
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, seconds, seconds)


def _inside_import(frame) -> bool:
    """Whether ``frame`` runs under Python's import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False
