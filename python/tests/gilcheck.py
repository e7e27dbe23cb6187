"""Checks, without timing, that a call releases the GIL while it runs.

The interpreter normally takes the GIL away from a running thread every
``sys.getswitchinterval()`` seconds. With that interval raised to minutes,
a thread that holds the GIL keeps it until it blocks or releases it on
purpose (as an extension does around its engine call). So: a worker
thread marks itself as inside ``call()`` and makes the call; the main
thread, waiting to get the GIL back from the worker, can run again
*while the worker is inside* only if ``call()`` released the GIL. If it
did not, the main thread runs only after the worker has finished.
"""

import sys
import threading

# Long enough that no forced switch happens during a test.
_NO_FORCED_SWITCH = 100.0


def gil_is_enabled():
    """False on a free-threaded build, where there is no GIL to release."""
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else check()


def observed_inside(call):
    """Runs ``call()`` in a worker thread; True if this thread ran Python
    code while the worker was inside ``call()``. Re-raises the call's
    exception, if any."""
    state = {"inside": False, "error": None}

    def worker():
        state["inside"] = True
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            state["error"] = e
        state["inside"] = False

    old = sys.getswitchinterval()
    sys.setswitchinterval(_NO_FORCED_SWITCH)
    try:
        t = threading.Thread(target=worker)
        # start() waits for the worker to start, with the GIL released; it
        # gets the GIL back only when the worker gives it up: inside call()
        # if call() releases it, else when the worker thread ends.
        t.start()
        seen = state["inside"]
        t.join()
    finally:
        sys.setswitchinterval(old)
    if state["error"] is not None:
        raise state["error"]
    return seen


def releases_gil(call, attempts=3):
    """True if any of ``attempts`` runs of ``observed_inside(call)`` saw the
    worker inside ``call()``. A call that releases the GIL can still be
    missed if it ends before this thread wakes up (microseconds), hence
    the retries; one that never releases it is never seen."""
    return any(observed_inside(call) for _ in range(attempts))
