"""Child processes that the tests interrupt with Ctrl-C (SIGINT)."""

import contextlib
import signal


@contextlib.contextmanager
def interruptible_children():
    """Start children that Ctrl-C reaches, even when this process ignores SIGINT.

    A shell starts a background job (``pytest &``, ``nohup``) with SIGINT
    ignored, and a child inherits an ignored signal: the program under test
    would then never see the Ctrl-C these tests send. Children started inside
    this context get SIGINT's default instead (a handled signal is reset at
    exec; a ``preexec_fn`` would fork a threaded process).
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
