"""SIGINT and SIGTERM held back over lines that must not be cut (:func:`held_signals`): a chunk of
steps and its bookkeeping, a progress bar's redraw.  A signal that arrives meanwhile is delivered
right after them, so Ctrl-C leaves a run's recorded rows consistent.
"""
from __future__ import annotations

import contextlib
import signal

__all__ = ["held_signals", "HELD_SIGNALS"]


def _run_pending_handlers() -> None:
    """Nothing: calling a Python function lets the interpreter run the handler of a signal that
    was delivered before (it runs handlers between bytecodes, not when the OS delivers)."""


#: the signals :func:`held_signals` holds back
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def held_signals():
    """Hold back SIGINT and SIGTERM over lines that must not be cut (a chunk of steps and its
    bookkeeping, a redraw); a signal that arrives meanwhile is delivered right after them.

    The signals' Python handlers are replaced meanwhile by one that notes the signal, and each
    signal noted is raised again (``signal.raise_signal``) once the handlers are back, so it
    meets the handler it would have met (a KeyboardInterrupt, the CLI's SIGTERM handler, or
    nothing when ignored).  A signal mask would not do: the operating system delivers a process
    signal to any thread that does not block it (a BLAS worker, say), and Python then runs the
    handler in the main thread between any two bytecodes.  A signal whose handler was pending
    when the lines began meets the noting handler too.  Python runs signal handlers in the main
    thread only, so elsewhere (a thread pool's worker) nothing can cut the lines and nothing is
    changed; so are handlers installed outside Python (``signal.getsignal`` gives None)."""
    noted: list[int] = []

    def note(signum, frame):
        noted.append(signum)

    old = {}
    try:
        try:
            for sig in HELD_SIGNALS:
                if signal.getsignal(sig) is not None:
                    old[sig] = signal.signal(sig, note)
        except ValueError:              # not the main thread: nothing to hold back
            pass
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(noted):
            signal.raise_signal(sig)
        _run_pending_handlers()         # their handlers run here, after the held lines
