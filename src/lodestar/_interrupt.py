"""Whether an exception is Ctrl-C in disguise.

Some extension modules catch everything while they import their C parts and
raise an ImportError of their own from it: NumPy says its C-extensions failed
when the user pressed Ctrl-C during ``import numpy``. The program must still
exit 130 with one line.
"""


def caused_by_interrupt(error: BaseException | None) -> bool:
    """Whether ``error`` is a KeyboardInterrupt, or was raised from or during one."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
