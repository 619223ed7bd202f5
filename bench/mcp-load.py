#!/usr/bin/env python3
"""Latency and throughput of an MCP server over Streamable HTTP, as the agents' clients see them.

Used by bench/agent-q-bench-mcp.el (`make bench`), against agent-q's server and against the
official MCP Python SDK's own server (FastMCP, `--serve-reference`) in the same run.

The client writes each request in one piece on a keep-alive connection with TCP_NODELAY, as
Node's fetch (under the agents' TypeScript SDK) does.  A client that writes headers and body
apart (httpx) sees the peer's delayed ACK (40 ms) on any server, and a fresh connection per
call hides a server's missing TCP_NODELAY: neither measures what the agents get.

Client: mcp-load.py URL TOKEN TOOL ARGS-JSON SEQUENTIAL CLIENTS CALLS [PID]
  prints one JSON object: p50/p90/max of SEQUENTIAL calls made one after the other, and the
  calls per second of CLIENTS concurrent clients making CALLS calls each.  With PID (the
  server's process, on Linux), also the server's CPU time (user + system, from /proc) per call
  in each phase: steadier than wall time on a busy machine.
  The server's CPU is also given per thread: the main thread's apart from the others' (for an
  Emacs, the main thread is the one that runs Lisp).
Reference servers: mcp-load.py --serve-reference PORT-FILE
  serves read_file and describe_symbol on 127.0.0.1 (a free port, written to PORT-FILE) with the
  SDK's FastMCP; --serve-lowlevel PORT-FILE serves the same two tools with the SDK's low-level
  Server and its StreamableHTTPSessionManager (what FastMCP is built on, without its layer of
  argument models), under uvicorn as FastMCP runs.
"""

import json
import os
import socket
import statistics
import sys
import threading
import time
from urllib.parse import urlparse

PROTOCOL = "2025-06-18"
DEADLINE = 300  # seconds: the whole run stops by then


class Connection:
    """One keep-alive HTTP/1.1 connection to the MCP endpoint."""

    def __init__(self, url, token):
        parsed = urlparse(url)
        self.host, self.port, self.path = parsed.hostname, parsed.port, parsed.path or "/"
        self.token = token
        self.session = None
        self.sock = socket.create_connection((self.host, self.port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.next_id = 1

    def _read_line(self):
        while b"\r\n" not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data

    def _read_exact(self, n):
        while len(self.buffer) < n:
            self._fill()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def post(self, message):
        """Send MESSAGE (a dict); return the JSON-RPC answer with the same id, or None."""
        body = json.dumps(message).encode()
        headers = [
            f"POST {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"Content-Length: {len(body)}",
            f"MCP-Protocol-Version: {PROTOCOL}",
        ]
        if self.token:
            headers.append(f"Authorization: Bearer {self.token}")
        if self.session:
            headers.append(f"Mcp-Session-Id: {self.session}")
        self.sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
        status = int(self._read_line().split()[1])
        response = {}
        while True:
            line = self._read_line()
            if not line:
                break
            name, _, value = line.decode().partition(":")
            response[name.strip().lower()] = value.strip()
        if "mcp-session-id" in response:
            self.session = response["mcp-session-id"]
        if response.get("transfer-encoding") == "chunked":
            data = b""
            while True:
                size = int(self._read_line().split(b";")[0], 16)
                if size == 0:
                    self._read_line()
                    break
                data += self._read_exact(size)
                self._read_exact(2)
        else:
            data = self._read_exact(int(response.get("content-length", "0")))
        if status >= 400:
            raise RuntimeError(f"HTTP {status}: {data[:200]!r}")
        if "id" not in message:
            return None
        text = data.decode()
        if response.get("content-type", "").startswith("text/event-stream"):
            for line in text.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    answer = json.loads(line[5:])
                    if answer.get("id") == message["id"]:
                        return answer
            raise RuntimeError(f"no answer in the stream: {text[:200]!r}")
        return json.loads(text)

    def request(self, method, params):
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        return self.post(message)

    def initialize(self):
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "mcp-load", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool, arguments):
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = answer.get("result") or {}
        if "error" in answer or result.get("isError"):
            raise RuntimeError(f"the call failed: {json.dumps(answer)[:300]}")
        return result


def cpu_seconds(pid):
    """User + system CPU time of process PID so far (all its threads), or None."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def cpu_threads(pid):
    """(main thread's, other threads') user + system CPU time of process PID so far, or None.

    The main thread is the one whose id is PID.  A thread that ended between two readings takes
    its time out of the others' sum: the process total (cpu_seconds) is the exact figure."""
    if not pid:
        return None
    main, others = 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds = (int(fields[11]) + int(fields[12])) / tick
        if int(tid) == pid:
            main += seconds
        else:
            others += seconds
    return main, others


def cpu_ms_per_call(before, after, calls):
    if before is None or after is None or not calls:
        return None
    return (after - before) * 1000 / calls


def threads_ms_per_call(before, after, calls):
    if before is None or after is None or not calls:
        return None, None
    return tuple((b - a) * 1000 / calls for a, b in zip(before, after))


def client(url, token, tool, arguments, sequential, clients, calls, pid=None):
    connection = Connection(url, token)
    connection.initialize()
    connection.call(tool, arguments)  # warm-up
    latencies = []
    cpu_start = cpu_seconds(pid)
    for _ in range(sequential):
        start = time.perf_counter()
        connection.call(tool, arguments)
        latencies.append((time.perf_counter() - start) * 1000)
    cpu_sequential = cpu_ms_per_call(cpu_start, cpu_seconds(pid), sequential)
    errors = []

    def worker():
        try:
            c = Connection(url, token)
            c.initialize()
            for _ in range(calls):
                c.call(tool, arguments)
        except Exception as e:  # reported, never hidden
            errors.append(str(e))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    cpu_start = cpu_seconds(pid)
    threads_start = cpu_threads(pid)
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE)
    elapsed = time.perf_counter() - start
    # The clients' initialize and notifications are in this phase's CPU too: 2 of 102 requests.
    cpu_concurrent = cpu_ms_per_call(cpu_start, cpu_seconds(pid), clients * calls)
    cpu_main, cpu_others = threads_ms_per_call(threads_start, cpu_threads(pid), clients * calls)
    latencies.sort()
    print(json.dumps({
        "p50_ms": statistics.median(latencies),
        "p90_ms": latencies[int(len(latencies) * 0.9) - 1],
        "max_ms": latencies[-1],
        "calls_per_s": clients * calls / elapsed,
        "cpu_ms_per_call_sequential": cpu_sequential,
        "cpu_ms_per_call_concurrent": cpu_concurrent,
        "cpu_main_ms_per_call_concurrent": cpu_main,
        "cpu_others_ms_per_call_concurrent": cpu_others,
        "errors": errors,
    }))


def serve_reference(port_file):
    from mcp.server.fastmcp import FastMCP

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = FastMCP("reference", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool()
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()

    @server.tool()
    def describe_symbol(symbol: str) -> str:
        """Describe a symbol."""
        return f"{symbol} is a function."

    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(port_file + ".tmp", port_file)
    timer = threading.Timer(DEADLINE, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    server.run(transport="streamable-http")


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def announce(port_file, port):
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(port_file + ".tmp", port_file)
    timer = threading.Timer(DEADLINE, lambda: os._exit(0))
    timer.daemon = True
    timer.start()


def serve_lowlevel(port_file):
    """The same two tools on the SDK's low-level Server, its session manager and uvicorn.

    As the SDK's own example of a Streamable HTTP server (simple-streamablehttp) is written: the
    tools listed with their JSON Schemas, which the SDK validates each call's arguments against,
    answers as server-sent events, sessions kept."""
    import contextlib

    import mcp.types as types
    import uvicorn
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Server("reference-lowlevel")

    @app.list_tools()
    async def list_tools():
        return [
            types.Tool(name="read_file", description="Read a text file.",
                       inputSchema={"type": "object", "required": ["path"],
                                    "properties": {"path": {"type": "string"}}}),
            types.Tool(name="describe_symbol", description="Describe a symbol.",
                       inputSchema={"type": "object", "required": ["symbol"],
                                    "properties": {"symbol": {"type": "string"}}}),
        ]

    @app.call_tool()
    async def call_tool(name, arguments):
        if name == "read_file":
            with open(arguments["path"], encoding="utf-8") as f:
                text = f.read()
        elif name == "describe_symbol":
            text = f"{arguments['symbol']} is a function."
        else:
            raise ValueError(f"unknown tool {name}")
        return [types.TextContent(type="text", text=text)]

    manager = StreamableHTTPSessionManager(app=app, event_store=None, json_response=False)

    class Handle:  # an ASGI app as a class instance: Starlette's Route passes it the request as is
        async def __call__(self, scope, receive, send):
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with manager.run():
            yield

    starlette = Starlette(routes=[Route("/mcp", endpoint=Handle())], lifespan=lifespan)
    port = free_port()
    announce(port_file, port)
    uvicorn.run(starlette, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1] == "--serve-reference":
        serve_reference(sys.argv[2])
    elif sys.argv[1] == "--serve-lowlevel":
        serve_lowlevel(sys.argv[2])
    else:
        url, token, tool, args, sequential, clients, calls = sys.argv[1:8]
        pid = int(sys.argv[8]) if len(sys.argv) > 8 and sys.argv[8] else None
        client(url, token, tool, json.loads(args), int(sequential), int(clients), int(calls), pid)
