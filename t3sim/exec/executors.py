"""Where sweep points run: in this process, on a local process pool, or on a Dask cluster.

Each backend is a generator ``backend(fn, items) -> (index, fn(item))`` that
yields results as they finish, in completion order. Closing the generator
early (Ctrl-C, SIGTERM, ``fail_fast``) cancels what has not started and stops
the workers, so nothing keeps computing for a sweep that is gone. ``fn`` must
be a module-level function and ``items`` picklable (they cross process and
host boundaries); ``fn`` is expected to return its errors as values, so an
exception out of a backend means the executor itself failed
(:class:`ExecutorError`).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple

from t3sim.errors import InputError
from t3sim.sim import report

#: ``on_progress(task index, status)``: a running simulation's progress report
OnProgress = Callable[[int, "report.RunStatus"], None]

EXECUTORS = ("local", "dask")
DASK_CONNECT_TIMEOUT_S = 10


class ExecutorError(RuntimeError):
    """The executor failed (a worker process died, the cluster went away); finished points are saved."""


def default_jobs() -> int:
    """The CPUs this process may use (``-j 0``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def serial(fn: Callable, items: Sequence[Any], on_progress: Optional[OnProgress] = None) -> Iterator[Tuple[int, Any]]:
    """Run the items one after another in this process (``-j 1``); the progress of each simulation goes
    to ``on_progress(index, status)``."""
    for i, item in enumerate(items):
        if on_progress is None:
            yield i, fn(item)
            continue
        with report.reporting(functools.partial(on_progress, i)):
            value = fn(item)
        yield i, value


def _pool_context():
    # A fresh interpreter per worker (not a fork of this one, which may hold threads and locks);
    # forkserver forks workers from one server that has already imported the simulator.
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["t3sim.exec.runner", "t3sim.system.core"])
        return ctx
    return multiprocessing.get_context("spawn")  # pragma: no cover - not POSIX


def prestart() -> None:
    """Start the worker pools' fork server now: it imports the simulator in its own process while the caller
    goes on (loading configs, expanding sweeps), so the first :func:`local_pool` forks its workers at once
    instead of waiting about a second for that import. Optional; idempotent."""
    ctx = _pool_context()
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver  # lazy: the fork server exists on POSIX only

        forkserver.ensure_running()


#: in a worker process: where the progress of its simulations goes (set by _worker_init)
_progress_queue = None
_task = -1


def _worker_init(queue=None) -> None:
    # Ctrl-C reaches the whole process group; only the parent handles it (and stops the workers).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _progress_queue
    _progress_queue = queue
    # a worker's simulations report to the parent (or to nobody), never to the shared stderr themselves
    report.install(_send_progress if queue is not None else None)


def _send_progress(status: report.RunStatus) -> None:
    try:
        _progress_queue.put_nowait((_task, status))
    except Exception:  # progress is best effort: a full or closed queue must not fail a simulation
        pass


def _tagged(fn: Callable, index: int, item: Any) -> Any:
    """``fn(item)`` in a worker, its progress reports tagged with the task ``index``; then an end marker
    ``(index, None)`` on the same queue, after the task's last report (one feeder per worker keeps order), so
    the parent knows it has every report of the task before it hands the result on."""
    global _task
    _task = index
    try:
        return fn(item)
    finally:
        if _progress_queue is not None:
            try:
                _progress_queue.put_nowait((index, None))
            except Exception:  # best effort, as the reports themselves
                pass


def local_pool(fn: Callable, items: Sequence[Any], jobs: int,
               on_progress: Optional[OnProgress] = None, order: Optional[Sequence[int]] = None) -> Iterator[Tuple[int, Any]]:
    """Run the items on ``jobs`` local worker processes; their simulations' progress comes back to
    ``on_progress(index, status)`` (polled every :data:`~t3sim.sim.report.POLL_S` seconds). ``order``: the
    indices in the order to hand them to the workers (default: as given); results keep their item index."""
    ctx = _pool_context()
    queue = ctx.Queue() if on_progress is not None else None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(queue,))
    clean = False
    try:
        futures = {pool.submit(_tagged, fn, i, items[i]): i for i in (range(len(items)) if order is None else order)}
        pending = set(futures)
        ended: set = set()  # tasks whose end marker arrived: all their reports were handed on
        while pending:
            done, pending = wait(pending, timeout=report.POLL_S if queue is not None else None,
                                 return_when=FIRST_COMPLETED)
            _drain(queue, on_progress, ended)
            for f in done:  # a result can overtake its last reports: wait (bounded) for the task's end marker
                _drain(queue, on_progress, ended, until=futures[f])
            for f in sorted(done, key=futures.__getitem__):
                try:
                    value = f.result()
                except BrokenProcessPool:
                    raise ExecutorError("a worker process died (killed, or out of memory?)") from None
                yield futures[f], value
        clean = True
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:
            _stop_pool(pool)
        if queue is not None:
            queue.close()
            queue.cancel_join_thread()


#: longest wait for a finished task's end marker (s): progress is best effort, a lost marker must not hang a sweep
END_MARKER_WAIT_S = 5.0


def _drain(queue, on_progress: Optional[OnProgress], ended: set, until: Optional[int] = None) -> None:
    """Hand every progress report waiting in ``queue`` to ``on_progress`` (end markers go to ``ended``); with
    ``until``, keep reading until that task's end marker has arrived (at most :data:`END_MARKER_WAIT_S`)."""
    if queue is None or on_progress is None:
        return
    while until is None or until not in ended:
        try:
            index, status = queue.get(timeout=END_MARKER_WAIT_S) if until is not None else queue.get_nowait()
        except Exception:  # queue.Empty (or a queue closed under us)
            return
        if status is None:
            ended.add(index)
        else:
            on_progress(index, status)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel queued points and terminate the workers (their running points are abandoned, never written)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14 (shuts down too)
    if terminate is not None:
        terminate()
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown() drops them
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)


def dask_client(scheduler: str):
    """A ``distributed.Client`` connected to ``scheduler`` (one-line input error if unreachable)."""
    distributed = import_distributed()
    try:
        return distributed.Client(scheduler, timeout=DASK_CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        msg = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise InputError(f"--scheduler {scheduler}", f"no Dask scheduler reachable ({msg})",
                         "the address of a running scheduler, e.g. tcp://HOST:8786") from None


def dask(fn: Callable, items: Sequence[Any], client) -> Iterator[Tuple[int, Any]]:
    """Run the items on a Dask distributed cluster through ``client`` (from :func:`dask_client`).

    Results come back to this process, which writes them: the workers need
    t3sim installed (same version) but no shared filesystem.
    """
    import distributed  # lazy: an optional dependency (t3sim[dask]), slow to import

    futures = []
    try:
        run = uuid.uuid4().hex[:8]
        futures = [client.submit(fn, item, key=f"t3sim-point-{run}-{i}", pure=False) for i, item in enumerate(items)]
        index = {f.key: i for i, f in enumerate(futures)}
        for f in distributed.as_completed(futures, loop=client.loop):
            try:
                value = f.result()
            except Exception as exc:  # KilledWorker, CancelledError, lost scheduler...
                raise ExecutorError(f"the Dask cluster failed to run a point ({type(exc).__name__}: {exc})") from None
            yield index[f.key], value
            f.release()
    finally:
        if futures:
            client.cancel([f for f in futures if not f.done()])


def import_distributed():
    """``distributed``, or a one-line input error saying how to install it."""
    try:
        import distributed  # lazy: an optional dependency (t3sim[dask]), slow to import
    except ImportError:
        raise InputError("--executor dask", "the optional Dask dependencies are not installed",
                         "pip install 't3sim[dask]', or the local executor") from None
    return distributed
