"""Whether an exception is Ctrl-C in disguise.

Some extension modules catch everything while they import their C parts and
raise an ImportError of their own from it: NumPy says its C-extensions failed
when the user pressed Ctrl-C during ``import numpy``. The program must still
exit 130 with one line.
"""

import signal
import sys


def caused_by_interrupt(error: BaseException | None) -> bool:
    """Whether ``error`` is a KeyboardInterrupt, or was raised from or during one."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


# Set by the command line's SIGINT handler. A KeyboardInterrupt raised while
# the interpreter runs a finaliser or a garbage-collector callback (JAX's
# _xla_gc_callback) is printed and swallowed ("Exception ignored in ..."),
# and the work goes on: a bootstrap test given Ctrl-C ran on for hours. A
# swallowed Ctrl-C is raised again RETRY_SECONDS later, and the long loops
# also check this flag between their steps (where SIGALRM does not exist).
_pending = False


def note_interrupt(signum, frame) -> None:
    """A SIGINT handler: remember the interrupt, then raise it as the default handler does.

    Inside an import it is only remembered, and tried again every
    :data:`RETRY_SECONDS` until it comes outside one (or the next
    :func:`raise_if_interrupted` raises it): a KeyboardInterrupt raised while
    an extension module sets itself up (jaxlib's MLIR bindings, 0.2-0.3 s
    after start) aborted the program (SIGABRT) or crashed it (SIGSEGV)
    instead of ending it.
    """
    global _pending
    _pending = True
    if not _inside_import(frame):
        raise KeyboardInterrupt
    # Raised as soon as the import is over, not at the next check: that can
    # be a whole batch of evaluation later (12 s, on a loaded machine).
    _try_again_soon()


RETRY_SECONDS = 0.02
"""How often an interrupt that came inside an import, or was swallowed, is tried again."""


def _try_again_soon() -> None:
    """Raise the remembered interrupt again in :data:`RETRY_SECONDS` (where SIGALRM exists)."""
    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, _retry)
        signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)


def _retry(signum, frame) -> None:
    """SIGALRM's handler while an interrupt waits for an import to end."""
    note_interrupt(signal.SIGINT, frame)


def _inside_import(frame) -> bool:
    """Whether ``frame`` runs under Python's import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if the program was interrupted and the interrupt was swallowed."""
    if _pending:
        raise KeyboardInterrupt


def quiet_swallowed_interrupt(unraisable) -> None:
    """A ``sys.unraisablehook``: no traceback for a Ctrl-C that a finaliser swallowed.

    :func:`note_interrupt` remembered it, and raises it again
    :data:`RETRY_SECONDS` later: JAX's ``_xla_gc_callback`` swallowed Ctrl-C
    while ``-m all_trec`` lowered its kernel, and the program went on for the
    rest of the lowering (8-12 s) to the next check. Any other unraisable
    exception is reported as Python reports it.
    """
    if _pending and isinstance(unraisable.exc_value, KeyboardInterrupt):
        _try_again_soon()
        return
    sys.__unraisablehook__(unraisable)
