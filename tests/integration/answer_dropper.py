"""A TCP proxy in front of a broker that loses the answers to Produce requests on purpose.

Clients connect to the proxy (the broker advertises the proxy's address); bytes pass both
ways unchanged, except that the proxy reads the request frames to learn which correlation
ids are Produce requests, and while `drops` is above zero it swallows the broker's answer to
one and closes both connections: the broker has appended the batch, the client never hears
so, and retries on a new connection -- the lost-answer case idempotence is for.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading

PRODUCE = 0


class AnswerDropper:
    def __init__(self, broker_port: int, drops: int = 1) -> None:
        self.broker_port = broker_port
        self.drops = drops
        self.dropped = 0
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="answer-dropper")

    def start(self) -> "AnswerDropper":
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def serve() -> None:
            self._server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
            self._ready.set()

        self._loop.run_until_complete(serve())
        self._loop.run_forever()

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.broker_port)
        except OSError:
            client_w.close()
            return
        produce_ids: set[int] = set()

        def close() -> None:
            client_w.close()
            broker_w.close()

        async def requests() -> None:
            while True:
                head = await client_r.readexactly(4)
                body = await client_r.readexactly(struct.unpack(">i", head)[0])
                api_key, _, correlation = struct.unpack_from(">hhi", body)
                if api_key == PRODUCE:
                    produce_ids.add(correlation)
                broker_w.write(head + body)

        async def answers() -> None:
            while True:
                head = await broker_r.readexactly(4)
                body = await broker_r.readexactly(struct.unpack(">i", head)[0])
                (correlation,) = struct.unpack_from(">i", body)
                if correlation in produce_ids and self.dropped < self.drops:
                    self.dropped += 1
                    close()                  # the batch is stored; the client never learns it
                    return
                client_w.write(head + body)

        tasks = [asyncio.create_task(requests()), asyncio.create_task(answers())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass                                     # the proxy is stopping
        finally:
            for task in tasks:
                task.cancel()
            close()
