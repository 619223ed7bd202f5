"""A real MCP client for agent-q's end-to-end tests (tests/agent-q-mcp-client-test.el, and the
terminal review in tests/agent-q-tmux-test.el).

The ERT tests start agent-q's MCP server in a batch Emacs and run this script, with the Python of
one of the virtual environments scripts/ensure-deps.sh --test makes under target/mcp-venv:

    python client.py SCENARIO 'JSON-ARGUMENTS'

JSON-ARGUMENTS always holds "connection_file" (the file agent-q-mcp-start wrote: url and token).
The script prints one JSON object per line on stdout, as things happen, and the test asserts on
them; Emacs keeps running meanwhile (it is the server).  Where a scenario must wait for Emacs
(list_changed, cancel), it says so in an event and reads a line from stdin.

Everything speaks through the official SDK's client API (ClientSession over streamable HTTP or
stdio in 1.x, Client in 2.x), except where the SDK cannot express the case, which says so.
Any failure prints {"event": "error", ...} and exits with status 1, so the test fails with the
reason.
"""

import asyncio
import json
import sys
import traceback
from datetime import timedelta

CLIENT_NAME = "agent-q-e2e"
CLIENT_VERSION = "1.2.3"
# Bounds every wait: the ERT test has its own, longer one.
TIMEOUT = 20.0


def emit(**fields):
    print(json.dumps(fields), flush=True)


def connection(args):
    with open(args["connection_file"], encoding="utf-8") as f:
        data = json.load(f)
    return data["url"], data["token"]


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


def result_fields(result):
    return {"isError": bool(result.isError), "text": text_of(result)}


# ---- SDK 1.x: the 2025 session protocol over Streamable HTTP ----


def sdk1_session(url, token, on_response=None, client_name=CLIENT_NAME, client_version=CLIENT_VERSION, **kwargs):
    """A context manager yielding an initialized 1.x ClientSession and the initialize result.
    ON_RESPONSE, if given, is an httpx response hook called with every HTTP response.
    CLIENT_NAME and CLIENT_VERSION are the clientInfo it introduces itself with."""
    import contextlib

    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def opened():
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            if on_response:
                http.event_hooks["response"].append(on_response)
            async with streamable_http_client(url, http_client=http) as (read, write, _session_id):
                async with ClientSession(
                    read,
                    write,
                    client_info=types.Implementation(name=client_name, version=client_version),
                    **kwargs,
                ) as session:
                    init = await asyncio.wait_for(session.initialize(), TIMEOUT)
                    yield session, init

    return opened()


def tool_fields(tool):
    return {
        "name": tool.name,
        "inputSchema": tool.inputSchema,
        "annotations": tool.annotations.model_dump(exclude_none=True) if tool.annotations else None,
    }


async def scenario_tools(args):
    """initialize, then tools/list."""
    url, token = connection(args)
    async with sdk1_session(url, token) as (session, init):
        emit(
            event="initialized",
            protocolVersion=init.protocolVersion,
            serverName=init.serverInfo.name,
            listChanged=bool(init.capabilities.tools and init.capabilities.tools.listChanged),
        )
        listed = await asyncio.wait_for(session.list_tools(), TIMEOUT)
        emit(event="tools", tools=[tool_fields(tool) for tool in listed.tools])


async def scenario_calls(args):
    """initialize (as args["client_name"] and args["client_version"] when given), then each of
    args["calls"] ({"name", "arguments"}) in turn."""
    url, token = connection(args)
    identity = {key: args[key] for key in ("client_name", "client_version") if key in args}
    async with sdk1_session(url, token, **identity) as (session, _init):
        for call in args["calls"]:
            result = await asyncio.wait_for(session.call_tool(call["name"], call.get("arguments")), TIMEOUT)
            emit(event="result", name=call["name"], **result_fields(result))


async def scenario_roots(args):
    """A client that declares the roots capability, as an IDE agent does for its workspace.

    For each phase of args["phases"] ({"roots": [URI...], "calls": [{"name", "arguments"}]}):
    from the second phase on, change the roots and send notifications/roots/list_changed, and
    wait until the server asked roots/list again; then make the calls.  Every roots/list the
    server sends is reported ("roots_asked", with the roots answered), and after each result
    the client waits for a line on stdin when args["pause"] is true (the test looks at Emacs
    meanwhile, with the session open).
    """
    import mcp.types as types

    url, token = connection(args)
    loop = asyncio.get_running_loop()
    phases = args["phases"]
    current = {"roots": phases[0]["roots"], "asked": 0}
    asked = asyncio.Event()

    async def list_roots(_context):
        current["asked"] += 1
        emit(event="roots_asked", count=current["asked"], roots=current["roots"])
        asked.set()
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in current["roots"]])

    async with sdk1_session(url, token, list_roots_callback=list_roots) as (session, _init):
        for index, phase in enumerate(phases):
            if index > 0:
                asked.clear()
                current["roots"] = phase["roots"]
                await session.send_roots_list_changed()
                emit(event="roots_changed", roots=phase["roots"])
                await asyncio.wait_for(asked.wait(), TIMEOUT)
            for call in phase["calls"]:
                result = await asyncio.wait_for(session.call_tool(call["name"], call.get("arguments")), TIMEOUT)
                emit(event="result", phase=index, name=call["name"], **result_fields(result))
                if args.get("pause"):
                    await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), TIMEOUT)


async def scenario_http_status(args):
    """POST an initialize request with args["headers"] and report the HTTP status.

    Raw httpx, not the SDK: the SDK turns a refused request into an exception whose text is its
    own, and what is tested here is the HTTP status itself (401, 403).
    """
    import httpx

    url, _token = connection(args)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    headers.update(args.get("headers") or {})
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.post(url, json=body, headers=headers)
    emit(
        event="http",
        status=response.status_code,
        body=response.text,
        wwwAuthenticate=response.headers.get("www-authenticate"),
        sessionId=response.headers.get("mcp-session-id"),
    )


async def scenario_cancel(args):
    """Call args["name"] with a progress token; once a progress notification says the call waits
    for the user's decision and the test says (a line on stdin) that its approval function is
    being asked, send notifications/cancelled for the call; then report what the test says
    (another line: whether the approval was withdrawn) and stop waiting for the call.

    The SDK 1.x has no call that cancels a request it sent (cancelling the awaiting task sends
    nothing to the server), so the notification is sent with the SDK's send_notification, for
    the request id the SDK gave the call, read from the session's counter just before the call.
    A server need not answer a cancelled request (the specification says it should not), so the
    client does not wait for an answer: it abandons the call, as the specification tells the
    sender of a cancellation to do.
    """
    import mcp.types as types

    url, token = connection(args)
    loop = asyncio.get_running_loop()
    async with sdk1_session(url, token) as (session, _init):
        waiting = asyncio.Event()

        async def on_progress(value, total, message):
            emit(event="progress", progress=value, message=message)
            if message and "decision" in message:
                waiting.set()

        request_id = session._request_id  # the id (and progress token) of the next request
        emit(event="started", requestId=request_id)
        call = asyncio.create_task(
            session.call_tool(args["name"], args["arguments"], progress_callback=on_progress)
        )
        await asyncio.wait_for(waiting.wait(), TIMEOUT)
        line = await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), TIMEOUT)
        emit(event="told", line=line.strip())
        await session.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(requestId=request_id, reason="the test cancels it")
                )
            )
        )
        emit(event="cancelled", requestId=request_id)
        line = await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), TIMEOUT)
        emit(event="told", line=line.strip())
        if call.done():
            emit(event="result", **result_fields(call.result()))
        else:
            call.cancel()
            try:
                await call
            except asyncio.CancelledError:
                pass


async def scenario_list_changed(args):
    """List the tools, tell the test (which then registers a tool), wait for
    notifications/tools/list_changed, list again."""
    import mcp.types as types

    url, token = connection(args)
    changed = asyncio.Event()
    # The notification travels on the session's GET stream, which the SDK opens in the
    # background after initialize; a notification sent before it is open is not replayed to
    # it.  The SDK says nothing when it is open, so its HTTP client's response hook does.
    listening = asyncio.Event()

    async def on_response(response):
        if response.request.method == "GET" and response.status_code == 200:
            listening.set()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            emit(event="list_changed")
            changed.set()

    async with sdk1_session(url, token, on_response=on_response, message_handler=on_message) as (session, _init):
        before = await asyncio.wait_for(session.list_tools(), TIMEOUT)
        await asyncio.wait_for(listening.wait(), TIMEOUT)
        emit(event="ready", count=len(before.tools))
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await asyncio.wait_for(changed.wait(), TIMEOUT)
        after = await asyncio.wait_for(session.list_tools(), TIMEOUT)
        emit(event="tools", names=[tool.name for tool in after.tools])


async def scenario_propose(args):
    """Call propose_file_edit with args["arguments"] (path, original, modified, description),
    as an agent proposing an edit does, and wait for the user's review in Emacs: up to
    args["timeout"] seconds (the user decides while the call is under way).  Reports each
    progress notification (what the call waits for), then the result the SDK received."""
    url, token = connection(args)
    timeout = float(args.get("timeout", TIMEOUT))

    async def on_progress(value, total, message):
        emit(event="progress", progress=value, message=message)

    async with sdk1_session(url, token) as (session, _init):
        emit(event="calling", name="propose_file_edit")
        result = await asyncio.wait_for(
            session.call_tool(
                "propose_file_edit",
                args["arguments"],
                read_timeout_seconds=timedelta(seconds=timeout),
                progress_callback=on_progress,
            ),
            timeout,
        )
        emit(event="result", name="propose_file_edit", **result_fields(result))


async def scenario_stdio(args):
    """Through the stdio relay (bin/agent-q-mcp): initialize, tools/list, tools/call.
    With args["roots"] (URIs), the client declares the roots capability and answers roots/list
    with them ("roots_asked" reports each request)."""
    import mcp.types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    callbacks = {}
    if "roots" in args:

        async def list_roots(_context):
            emit(event="roots_asked", roots=args["roots"])
            return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in args["roots"]])

        callbacks["list_roots_callback"] = list_roots
    params = StdioServerParameters(command=args["relay"], args=["--connection-file", args["connection_file"]])
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION), **callbacks
        ) as session:
            init = await asyncio.wait_for(session.initialize(), TIMEOUT)
            emit(event="initialized", protocolVersion=init.protocolVersion, serverName=init.serverInfo.name)
            listed = await asyncio.wait_for(session.list_tools(), TIMEOUT)
            emit(event="tools", names=[tool.name for tool in listed.tools])
            for call in args["calls"]:
                result = await asyncio.wait_for(session.call_tool(call["name"], call.get("arguments")), TIMEOUT)
                emit(event="result", name=call["name"], **result_fields(result))


# ---- SDK 2.x: the stateless 2026-07-28 revision ----


async def scenario_stateless(args):
    """With the 2.x SDK pinned to 2026-07-28 (no initialize, no session): server/discover via
    the SDK's automatic negotiation, tools/list, then each of args["calls"]."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url, token = connection(args)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http:
        client = Client(
            streamable_http_client(url, http_client=http),
            client_info=types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
            mode="auto",
        )
        async with client:
            emit(
                event="connected",
                protocolVersion=client.protocol_version,
                serverName=client.server_info.name if client.server_info else None,
                initialized=client.session.initialize_result is not None,
            )
            listed = await asyncio.wait_for(client.list_tools(), TIMEOUT)
            emit(event="tools", names=[tool.name for tool in listed.tools])
            for call in args["calls"]:
                result = await asyncio.wait_for(client.call_tool(call["name"], call.get("arguments")), TIMEOUT)
                emit(event="result", name=call["name"], isError=bool(result.is_error), text=text_of(result))


async def scenario_stateless_listen(args):
    """With the 2.x SDK in 2026-07-28: open a subscriptions/listen stream for tool list changes,
    tell the test (which then registers a tool), wait for the change event, list again."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url, token = connection(args)
    loop = asyncio.get_running_loop()
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http:
        client = Client(
            streamable_http_client(url, http_client=http),
            client_info=types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
        )
        async with client:
            before = await asyncio.wait_for(client.list_tools(), TIMEOUT)
            async with client.listen(tools_list_changed=True) as subscription:
                emit(event="ready", count=len(before.tools), protocolVersion=client.protocol_version)
                await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), TIMEOUT)
                events = subscription.__aiter__()
                event = await asyncio.wait_for(events.__anext__(), TIMEOUT)
                emit(event="list_changed", kind=type(event).__name__)
            after = await asyncio.wait_for(client.list_tools(), TIMEOUT)
            emit(event="tools", names=[tool.name for tool in after.tools])


async def scenario_idle_flood(args):
    """Open args["count"] TCP connections to the server's port without sending anything, hold
    them args["seconds"] seconds, and report every args["every"] seconds how many the server has
    closed.  Raw sockets, not the SDK: this is what an attacker without the token does.  Bounded
    in count and time, and only ever to the loopback address of the connection file."""
    import resource
    import socket
    import time
    from urllib.parse import urlsplit

    url, _token = connection(args)
    parts = urlsplit(url)
    assert parts.hostname in ("127.0.0.1", "localhost"), parts.hostname
    count, seconds, every = int(args["count"]), float(args["seconds"]), float(args.get("every", 1))
    assert count <= 2000 and seconds <= 120
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))
    sockets, refused = [], 0
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.connect(("127.0.0.1", parts.port))
            s.setblocking(False)
            sockets.append(s)
        except OSError:
            refused += 1
            s.close()
    emit(event="flooding", opened=len(sockets), refused=refused)
    start = time.monotonic()
    closed = set()
    while True:
        for i, s in enumerate(sockets):
            if i in closed:
                continue
            try:
                if s.recv(1) == b"":
                    closed.add(i)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(i)
        elapsed = time.monotonic() - start
        emit(event="state", t=round(elapsed, 2), open=len(sockets) - len(closed))
        if elapsed >= seconds:
            break
        await asyncio.sleep(every)
    for s in sockets:
        s.close()


async def scenario_pending_flood(args):
    """Open args["sessions"] sessions and call args["name"] with args["arguments"]
    args["per_session"] times in each, all at once, with progress tokens.  Report each result
    that arrives (refusals come at once), then "waiting" once args["expect_waiting"] calls have
    been told they wait for the user's decision; then wait for a line on stdin and leave,
    abandoning the calls."""
    import contextlib

    url, token = connection(args)
    loop = asyncio.get_running_loop()
    waiting = set()
    enough = asyncio.Event()
    expect = int(args["expect_waiting"])
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for _ in range(int(args["sessions"])):
            session, _init = await stack.enter_async_context(sdk1_session(url, token))
            sessions.append(session)
        emit(event="sessions", count=len(sessions))

        async def one(session, tag):
            async def on_progress(value, total, message):
                if message and "decision" in message:
                    waiting.add(tag)
                    if len(waiting) >= expect:
                        enough.set()

            result = await session.call_tool(args["name"], args["arguments"], progress_callback=on_progress)
            emit(event="result", tag=tag, **result_fields(result))

        # Each waiting call holds a connection; args["stagger"] seconds between them keeps the
        # burst of new connections, not yet proven, under the server's cap on those.
        tasks = []
        for j in range(int(args["per_session"])):
            for i, session in enumerate(sessions):
                tasks.append(asyncio.create_task(one(session, f"{i}-{j}")))
                await asyncio.sleep(float(args.get("stagger", 0)))
        await asyncio.wait_for(enough.wait(), TIMEOUT * 3)
        emit(event="waiting", count=len(waiting))
        line = await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), TIMEOUT * 3)
        emit(event="told", line=line.strip())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def scenario_big_call(args):
    """Call args["name"] with one argument args["key"] holding args["count"] small numbers (a
    request of about 2 * count bytes), with the token, through the SDK; report the result."""
    url, token = connection(args)
    arguments = {args["key"]: [1] * int(args["count"])}
    try:
        async with sdk1_session(url, token) as (session, _init):
            result = await asyncio.wait_for(session.call_tool(args["name"], arguments), TIMEOUT * 3)
            emit(event="result", name=args["name"], **result_fields(result))
    except BaseException as error:  # the SDK raises on an HTTP error status (413)
        texts = [f"{type(e).__name__}: {e}" for e in getattr(error, "exceptions", [error])]
        emit(event="refused", error="; ".join(texts))


SCENARIOS = {
    "idle-flood": scenario_idle_flood,
    "pending-flood": scenario_pending_flood,
    "big-call": scenario_big_call,
    "stateless-listen": scenario_stateless_listen,
    "tools": scenario_tools,
    "calls": scenario_calls,
    "roots": scenario_roots,
    "http-status": scenario_http_status,
    "cancel": scenario_cancel,
    "list-changed": scenario_list_changed,
    "stdio": scenario_stdio,
    "propose": scenario_propose,
    "stateless": scenario_stateless,
}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        print(f"usage: client.py {{{'|'.join(SCENARIOS)}}} JSON-ARGUMENTS", file=sys.stderr)
        return 2
    try:
        asyncio.run(SCENARIOS[sys.argv[1]](json.loads(sys.argv[2])))
    except BaseException as error:  # report everything, including timeouts and SDK errors
        emit(event="error", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
        return 1
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
