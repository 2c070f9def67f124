"""A TCP proxy on loopback that holds every chunk it forwards for DELAY_MS, each way: an
object store DELAY_MS x 2 away, for timing what waits on the network (benches/s3/plan.sh).

    python3 latency-proxy.py LISTEN_PORT TARGET_PORT DELAY_MS
"""
import asyncio
import sys

LISTEN, TARGET, DELAY = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000


async def pipe(reader, writer):
    try:
        while data := await reader.read(1 << 16):
            await asyncio.sleep(DELAY)
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    server_reader, server_writer = await asyncio.open_connection("127.0.0.1", TARGET)
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    async with server:
        await server.serve_forever()


asyncio.run(main())
