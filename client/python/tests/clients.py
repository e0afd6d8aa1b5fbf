"""The two Python clients under one set of tests: SYNC is dedupd itself,
AIO is dedupd.aio driven from the same blocking test code.

A test class that uses self.api (api.Client, api.do, api.do_batch,
api.do_in_order, api.do_parked, api.reconcile) instead of dedupd.* runs against either;
aio_twin(cls) makes the copy that runs it against dedupd.aio, so every
such test runs twice against the one server.

AIO runs dedupd.aio's coroutines on one event loop in a background thread.
Its Client is a dedupd.aio.Client whose methods block until their
coroutine finished on that loop (what they raise is re-raised in the
test's thread, BaseExceptions included). The test's fn and settle are
blocking functions (they sleep, and call the client), so AIO runs them in
worker threads (asyncio.to_thread) under their own signature; dedupd.aio
awaits them like any coroutine function. A test's wrapper around the
client (one that loses a reply, or counts extensions) is given to
dedupd.aio as an object whose methods run the wrapper's in a thread.
"""

import asyncio
import functools
import threading

import dedupd
import dedupd.aio

_loop = None
_loop_lock = threading.Lock()


def _event_loop():
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="dedupd-aio-tests",
                             daemon=True).start()
        return _loop


def run(coro):
    """Runs coro on the loop; returns what it returns, raises what it raises."""
    async def guarded():
        try:
            return False, await coro
        except BaseException as e:  # handed to the test's thread, not the loop's
            return True, e
    failed, value = asyncio.run_coroutine_threadsafe(guarded(), _event_loop()).result()
    if failed:
        raise value
    return value


class AioClient:
    """A dedupd.aio.Client (made on the loop) with blocking methods."""

    def __init__(self, *args, **kwargs):
        async def make():
            return dedupd.aio.Client(*args, **kwargs)
        self.aio = run(make())

    def __getattr__(self, name):
        attr = getattr(self.aio, name)
        if not callable(attr):
            return attr
        if name == "iter_records":
            async def collect(*args, **kwargs):
                return [r async for r in attr(*args, **kwargs)]
            return lambda *args, **kwargs: iter(run(collect(*args, **kwargs)))
        return lambda *args, **kwargs: run(attr(*args, **kwargs))

    def __repr__(self):
        return repr(self.aio)

    def close(self):
        run(self.aio.close())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _AsyncView:
    """A blocking client object seen by dedupd.aio: each call runs in a
    worker thread."""

    def __init__(self, client):
        self._client = client

    def __getattr__(self, name):
        method = getattr(self._client, name)
        if name == "iter_records":
            async def records(*args, **kwargs):
                for r in await asyncio.to_thread(lambda: list(method(*args, **kwargs))):
                    yield r
            return records

        async def call(*args, **kwargs):
            return await asyncio.to_thread(method, *args, **kwargs)
        return call


def _aio_of(client):
    """The dedupd.aio.Client behind an AioClient, or a view of a wrapper
    (or of an AioClient with a method replaced by the test)."""
    if type(client) is AioClient and set(vars(client)) == {"aio"}:
        return client.aio
    return _AsyncView(client)


def _in_thread(fn):
    """fn as a coroutine function run in a worker thread, with fn's
    signature (dedupd passes record= and lease= by what fn declares)."""
    if fn is None:
        return None

    @functools.wraps(fn)
    async def threaded(*args, **kwargs):
        return await asyncio.to_thread(fn, *args, **kwargs)
    return threaded


class SYNC:
    name = "sync"
    Client = dedupd.Client
    do = staticmethod(dedupd.do)
    do_batch = staticmethod(dedupd.do_batch)
    do_in_order = staticmethod(dedupd.do_in_order)
    do_parked = staticmethod(dedupd.do_parked)
    reconcile = staticmethod(dedupd.reconcile)


class AIO:
    name = "aio"
    Client = AioClient

    @staticmethod
    def do(client, consumer, key, fn, settle=None, **kwargs):
        return run(dedupd.aio.do(_aio_of(client), consumer, key, _in_thread(fn),
                                 settle=_in_thread(settle), **kwargs))

    @staticmethod
    def do_batch(client, consumer, items, fn, settle=None, **kwargs):
        return run(dedupd.aio.do_batch(_aio_of(client), consumer, items, _in_thread(fn),
                                       settle=_in_thread(settle), **kwargs))

    @staticmethod
    def do_in_order(client, consumer, stream, sequence, fn, settle=None, released=None,
                    settle_released=None, **kwargs):
        return run(dedupd.aio.do_in_order(_aio_of(client), consumer, stream, sequence,
                                          _in_thread(fn), settle=_in_thread(settle),
                                          released=_in_thread(released),
                                          settle_released=_in_thread(settle_released), **kwargs))

    @staticmethod
    def do_parked(client, consumer, fn, settle=None, **kwargs):
        return run(dedupd.aio.do_parked(_aio_of(client), consumer, _in_thread(fn),
                                        settle=_in_thread(settle), **kwargs))

    @staticmethod
    def reconcile(client, consumer, decide=None, settle=None, **kwargs):
        return run(dedupd.aio.reconcile(_aio_of(client), consumer, _in_thread(decide),
                                        settle=_in_thread(settle), **kwargs))


def aio_twin(cls):
    """cls run against dedupd.aio: a subclass named cls.__name__ + "Aio"."""
    return type(cls.__name__ + "Aio", (cls,), {"api": AIO, "__module__": cls.__module__})
