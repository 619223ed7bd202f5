#!/usr/bin/env python3
"""Benchmark 9: code intelligence on a real Python project, three ways, one run.

Used by bench/agent-q-bench-code.el (`make bench`).  Every command prints one JSON object on
its last line of output.

  code-intel.py prepare SOURCE DEST
      copies the pinned corpus (an unpacked sdist) to DEST, plants a file of known errors
      (rich/_bench_planted.py), makes DEST a git repository (project.el, Serena and eglot all
      find their project root by it) and prints the ground truth, computed from Python's `ast`.
  code-intel.py raw DEST PYRIGHT-LANGSERVER
      the server's own time: a raw LSP client (this file, as eglot talks to the server) against
      the pinned pyright.
  code-intel.py serena DEST SERENA PYRIGHT-LANGSERVER
      Serena (serena-agent, tools interface) over MCP stdio, driven by the MCP Python SDK's
      client, its pyright the same pinned one (ls_path), SERENA_HOME a temporary directory,
      usage reporting and dashboard off.
  code-intel.py agentq DEST URL TOKEN
      agent-q's tools over its MCP server (Streamable HTTP, the client of bench/mcp-load.py).

Each side answers the same five questions: the definition of Console.print, the references of
rich.cells.cell_len, the outline of rich/segment.py, the diagnostics of the planted file and the
hover text (type) at a call of Console.print.  Cold is the first call; warm the median of
WARM further calls.  Accuracy is checked against the ground truth (file and line).
"""

import ast
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

WARM = 20
TIMEOUT = 120  # seconds for any one answer

PLANTED = '''"""Errors planted by agent-q's benchmark 9 (not part of rich)."""

from rich.segment import Segment


def total_width(segments: list[Segment]) -> int:
    width: int = "wide"
    return sum(len(segment.text) for segment in segments) + not_defined_anywhere


def loud(segment: Segment) -> str:
    return segment.text.no_such_method()


def half(number: int) -> str:
    return number // 2
'''
# The planted errors: (line, what pyright's rule is about).
PLANTED_ERRORS = [(7, "str assigned to int"), (8, "undefined name"),
                  (12, "unknown attribute"), (16, "wrong return type")]
PLANTED_FILE = "rich/_bench_planted.py"


def emit(obj):
    print(json.dumps(obj), flush=True)


def char_column(line_text, byte_offset):
    """1-based character column of BYTE_OFFSET (UTF-8) in LINE_TEXT."""
    return len(line_text.encode()[:byte_offset].decode(errors="replace")) + 1


def utf16_to_char(line_text, units):
    """0-based character index of the UTF-16 offset UNITS in LINE_TEXT."""
    count = 0
    for index, char in enumerate(line_text):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line_text)


def char_to_utf16(line_text, chars):
    return sum(2 if ord(c) > 0xFFFF else 1 for c in line_text[:chars])


# ---------------------------------------------------------------------------------------------
# Ground truth


def ground_truth(root):
    def source(rel):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read()

    # Console.print's definition, and a call of it inside Console (self.print(...)).
    text = source("rich/console.py")
    lines = text.splitlines()
    tree = ast.parse(text)
    console = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Console")
    method = next(n for n in console.body
                  if isinstance(n, ast.FunctionDef) and n.name == "print")
    def_line = method.lineno
    while not re.match(r"\s*def print\b", lines[def_line - 1]):
        def_line += 1  # decorators come first in lineno of old Pythons
    definition = {"file": "rich/console.py", "line": def_line,
                  "column": lines[def_line - 1].index("print") + 1}
    call = None
    for node in ast.walk(console):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "print" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"):
            if call is None or node.lineno < call[0]:
                line_text = lines[node.lineno - 1]
                call = (node.lineno, line_text.index("self.print(") + len("self.") + 1)
    # Every reference of rich.cells.cell_len: its definition, the names imported from
    # rich.cells and their uses, and `cells.cell_len` through an imported module.
    references = set()
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, "rich")):
        for name in names:
            if name.endswith(".py"):
                files.append(os.path.relpath(os.path.join(dirpath, name), root))
    files.sort()
    for rel in files:
        tree = ast.parse(source(rel))
        local = set()
        modules = set()
        is_cells = rel == "rich/cells.py"
        if is_cells:
            local.add("cell_len")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if ((node.level == 1 and module == "cells" and rel.count("/") == 1)
                        or module == "rich.cells"):
                    for alias in node.names:
                        if alias.name == "cell_len":
                            local.add(alias.asname or alias.name)
                            references.add((rel, alias.lineno))
                elif (node.level == 1 and module == "" and rel.count("/") == 1) or module == "rich":
                    for alias in node.names:
                        if alias.name == "cells":
                            modules.add(alias.asname or "cells")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "rich.cells" and alias.asname:
                        modules.add(alias.asname)
            elif is_cells and isinstance(node, ast.FunctionDef) and node.name == "cell_len":
                references.add((rel, node.lineno))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in local:
                references.add((rel, node.lineno))
            elif (isinstance(node, ast.Attribute) and node.attr == "cell_len"
                  and isinstance(node.value, ast.Name) and node.value.id in modules):
                references.add((rel, node.lineno))
    cells_lines = source("rich/cells.py").splitlines()
    cells_tree = ast.parse(source("rich/cells.py"))
    cell_def = next(n for n in cells_tree.body
                    if isinstance(n, ast.FunctionDef) and n.name == "cell_len")
    cell_len_at = {"file": "rich/cells.py", "line": cell_def.lineno,
                   "column": cells_lines[cell_def.lineno - 1].index("cell_len") + 1}
    # The top-level symbols of rich/segment.py: classes, functions and names bound at
    # module level (also inside a top-level `if`, such as `if __name__ == "__main__":`).
    outline = []

    def bound(nodes):
        for node in nodes:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                outline.append(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            outline.append(sub.id)
            elif isinstance(node, (ast.If, ast.With, ast.For)):
                bound(node.body)
                bound(getattr(node, "orelse", []))
    bound(ast.parse(source("rich/segment.py")).body)
    kloc = sum(len(source(rel).splitlines()) for rel in files)
    return {
        "files": len(files), "lines": kloc,
        "definition": definition, "call": {"file": "rich/console.py", "line": call[0],
                                           "column": call[1]},
        "references": sorted([f, l] for f, l in references),
        "reference_files": len({f for f, _ in references}),
        "cell_len": cell_len_at,
        "outline": sorted(set(outline)),
        "planted": {"file": PLANTED_FILE, "errors": [line for line, _ in PLANTED_ERRORS]},
    }


def prepare(source, dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(source, dest)
    with open(os.path.join(dest, PLANTED_FILE), "w", encoding="utf-8") as f:
        f.write(PLANTED)
    subprocess.run(["git", "init", "-q", dest], check=True)
    truth = ground_truth(dest)
    with open(os.path.join(dest, ".git", "agent-q-ground-truth.json"), "w") as f:
        json.dump(truth, f)
    emit(truth)


def load_truth(root):
    with open(os.path.join(root, ".git", "agent-q-ground-truth.json")) as f:
        return json.load(f)


# ---------------------------------------------------------------------------------------------
# Measuring


def rss_tree_kb(pid):
    """RSS (kB) of PID and all its descendants, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    total, todo, procs = 0, [pid], []
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            with open(f"/proc/{p}/cmdline", "rb") as f:
                procs.append(f.read().replace(b"\0", b" ").decode(errors="replace")[:200])
        except OSError:
            pass
        todo.extend(children.get(p, []))
    return total, procs


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1000.0, value


def cold_warm(fn, warm=WARM):
    """Time FN once (cold) then WARM times; return (cold_ms, warm_p50_ms, first value)."""
    cold, value = timed(fn)
    times = [timed(fn)[0] for _ in range(warm)]
    return {"cold_ms": cold, "warm_p50_ms": statistics.median(times),
            "warm_max_ms": max(times)}, value


def check_lines(found, expected):
    """Compare sets of (file, line); return counts and samples."""
    found, expected = set(found), {tuple(e) for e in expected}
    return {"found": len(found), "expected": len(expected),
            "missing": sorted(expected - found)[:10], "n_missing": len(expected - found),
            "false": sorted(found - expected)[:10], "n_false": len(found - expected)}


# ---------------------------------------------------------------------------------------------
# The raw LSP client


class Lsp:
    def __init__(self, command, root):
        self.root = root
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=root)
        self.lock = threading.Condition()
        self.answers = {}
        self.diagnostics = {}
        self.next_id = 1
        self.versions = {}
        threading.Thread(target=self._read, daemon=True).start()

    def uri(self, rel):
        return "file://" + os.path.join(self.root, rel)

    def _send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(out.read(length))
            if "method" in message and "id" in message:
                result = None
                if message["method"] == "workspace/configuration":
                    result = [None for _ in message["params"]["items"]]
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "method" in message:
                if message["method"] == "textDocument/publishDiagnostics":
                    with self.lock:
                        self.diagnostics[message["params"]["uri"]] = (
                            time.perf_counter(), message["params"]["diagnostics"])
                        self.lock.notify_all()
            else:
                with self.lock:
                    self.answers[message["id"]] = message
                    self.lock.notify_all()

    def request(self, method, params):
        with self.lock:
            ident = self.next_id
            self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        deadline = time.time() + TIMEOUT
        with self.lock:
            while ident not in self.answers:
                if not self.lock.wait(deadline - time.time()):
                    raise TimeoutError(method)
            answer = self.answers.pop(ident)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result")

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def open(self, rel):
        with open(os.path.join(self.root, rel), encoding="utf-8") as f:
            text = f.read()
        self.versions[rel] = 1
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri(rel), "languageId": "python", "version": 1, "text": text}})
        return text

    def wait_diagnostics(self, rel, after, nonempty=True):
        deadline = time.time() + TIMEOUT
        uri = self.uri(rel)
        with self.lock:
            while True:
                got = self.diagnostics.get(uri)
                if got and got[0] > after and (got[1] or not nonempty):
                    return got
                if not self.lock.wait(max(0.01, deadline - time.time())):
                    if time.time() > deadline:
                        raise TimeoutError("publishDiagnostics")


def line_text(root, rel, line):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read().splitlines()[line - 1]


def lsp_position(root, rel, line, column):
    text = line_text(root, rel, line)
    return {"line": line - 1, "character": char_to_utf16(text, column - 1)}


def run_raw(root, langserver):
    truth = load_truth(root)
    result = {"side": "raw"}
    start = time.perf_counter()
    lsp = Lsp([langserver, "--stdio"], root)
    init = lsp.request("initialize", {
        "processId": os.getpid(), "rootUri": "file://" + root, "rootPath": root,
        "workspaceFolders": [{"uri": "file://" + root, "name": os.path.basename(root)}],
        "initializationOptions": {},
        "capabilities": {
            "workspace": {"configuration": True, "workspaceFolders": True,
                          "didChangeConfiguration": {"dynamicRegistration": False},
                          "symbol": {"dynamicRegistration": False}},
            "textDocument": {
                "synchronization": {"didSave": True},
                "hover": {"contentFormat": ["plaintext"]},
                "definition": {"linkSupport": False},
                "references": {},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                "publishDiagnostics": {"relatedInformation": False},
                "rename": {"prepareSupport": True}},
            "window": {"workDoneProgress": True}}})
    assert init is not None
    result["initialize_ms"] = (time.perf_counter() - start) * 1000.0
    lsp.notify("initialized", {})
    lsp.notify("workspace/didChangeConfiguration", {"settings": {}})

    # Definition of Console.print at a call of it.
    call = truth["call"]
    lsp.open(call["file"])
    pos = lsp_position(root, call["file"], call["line"], call["column"])
    params = {"textDocument": {"uri": lsp.uri(call["file"])}, "position": pos}
    timing, answer = cold_warm(lambda: lsp.request("textDocument/definition", params))
    locations = answer if isinstance(answer, list) else [answer]
    found = [(os.path.relpath(loc["uri"][7:], root), loc["range"]["start"]["line"] + 1)
             for loc in locations if loc]
    d = truth["definition"]
    result["definition"] = dict(timing, correct=found == [(d["file"], d["line"])], found=found)

    # type_at (hover) at the same call.
    timing, answer = cold_warm(lambda: lsp.request("textDocument/hover", params))
    contents = (answer or {}).get("contents", "")
    hover = contents.get("value", "") if isinstance(contents, dict) else str(contents)
    result["type_at"] = dict(timing, text=hover[:400], correct="def print" in hover
                             or "print(" in hover)

    # References of cell_len, at its definition, the declaration included.
    c = truth["cell_len"]
    lsp.open(c["file"])
    params = {"textDocument": {"uri": lsp.uri(c["file"])},
              "position": lsp_position(root, c["file"], c["line"], c["column"]),
              "context": {"includeDeclaration": True}}
    timing, answer = cold_warm(lambda: lsp.request("textDocument/references", params))
    found = [(os.path.relpath(loc["uri"][7:], root), loc["range"]["start"]["line"] + 1)
             for loc in answer or []]
    check = check_lines(found, truth["references"])
    result["references"] = dict(timing, **check, locations=len(answer or []),
                                correct=check["n_missing"] == 0 and check["n_false"] == 0)

    # Outline of rich/segment.py.
    lsp.open("rich/segment.py")
    params = {"textDocument": {"uri": lsp.uri("rich/segment.py")}}
    timing, answer = cold_warm(lambda: lsp.request("textDocument/documentSymbol", params))
    names = sorted({s["name"] for s in answer or []})
    result["outline"] = dict(timing, names=names, correct=names == truth["outline"])

    # Diagnostics of the planted file: from didOpen to the first non-empty publication (cold),
    # then from an unchanged edit (didChange, new version) to the next publication.
    before = time.perf_counter()
    text = lsp.open(PLANTED_FILE)
    got_at, diags = lsp.wait_diagnostics(PLANTED_FILE, before)
    cold = (got_at - before) * 1000.0
    edits = []
    for version in range(2, 7):
        before = time.perf_counter()
        lsp.notify("textDocument/didChange", {
            "textDocument": {"uri": lsp.uri(PLANTED_FILE), "version": version},
            "contentChanges": [{"text": text}]})
        got_at, diags = lsp.wait_diagnostics(PLANTED_FILE, before)
        edits.append((got_at - before) * 1000.0)
    errors = sorted({d["range"]["start"]["line"] + 1 for d in diags if d.get("severity") == 1})
    result["diagnostics"] = {
        "cold_ms": cold, "after_edit_p50_ms": statistics.median(edits),
        "all": sorted([d["range"]["start"]["line"] + 1, d.get("severity"), d.get("code", "")]
                      for d in diags),
        "errors": errors, "correct": errors == truth["planted"]["errors"]}
    result["rss_mb"] = rss_tree_kb(lsp.proc.pid)[0] / 1024.0
    try:
        lsp.request("shutdown", None)
        lsp.notify("exit", None)
        lsp.proc.wait(5)
    except Exception:
        lsp.proc.kill()
    emit(result)


# ---------------------------------------------------------------------------------------------
# Serena over MCP stdio


def serena_text(answer):
    return "".join(getattr(c, "text", "") for c in answer.content)


def serena_lines(text, pattern):
    return [(m.group(1), int(m.group(2))) for m in re.finditer(pattern, text)]


async def serena_async(root, serena, langserver, home):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    truth = load_truth(root)
    result = {"side": "serena"}
    env = dict(os.environ, SERENA_HOME=home, SERENA_USAGE_REPORTING="false")
    params = StdioServerParameters(
        command=serena,
        args=["start-mcp-server", "--project", root, "--agent-interface", "tools",
              "--enable-web-dashboard", "false", "--open-web-dashboard", "false",
              "--enable-gui-log-window", "false", "--log-level", "WARNING"],
        env=env)
    start = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result["initialize_ms"] = (time.perf_counter() - start) * 1000.0
            tools = {t.name for t in (await session.list_tools()).tools}
            result["tools"] = sorted(tools)

            async def call(name, arguments):
                answer = await session.call_tool(name, arguments)
                text = serena_text(answer)
                if answer.isError:
                    raise RuntimeError(f"{name}: {text[:300]}")
                return text

            async def cold_warm_async(name, arguments):
                t0 = time.perf_counter()
                text = await call(name, arguments)
                cold = (time.perf_counter() - t0) * 1000.0
                times = []
                for _ in range(WARM):
                    t0 = time.perf_counter()
                    await call(name, arguments)
                    times.append((time.perf_counter() - t0) * 1000.0)
                return {"cold_ms": cold, "warm_p50_ms": statistics.median(times),
                        "warm_max_ms": max(times)}, text

            d = truth["definition"]
            timing, text = await cold_warm_async("find_symbol", {
                "name_path_pattern": "Console/print", "relative_path": "rich/console.py"})
            data = json.loads(text)
            found = [(s.get("relative_path"), s.get("body_location", {}).get("start_line", -1) + 1)
                     for s in data] if isinstance(data, list) else []
            result["definition"] = dict(timing, found=found, text=text[:300],
                                        correct=(d["file"], d["line"]) in found
                                        and len(found) == 1)

            timing, text = await cold_warm_async("find_referencing_symbols", {
                "name_path": "cell_len", "relative_path": "rich/cells.py"})
            found = set()
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            # Each referencing symbol carries the reference's lines ("  123:  text", the
            # reference marked with ">") in content_around_reference.
            items = []
            if isinstance(data, dict):
                for rel, groups in data.items():
                    for group in (groups.values() if isinstance(groups, dict) else [groups]):
                        for item in group if isinstance(group, list) else [group]:
                            items.append((rel, item))
            elif isinstance(data, list):
                items = [(s.get("relative_path"), s) for s in data]
            for rel, item in items:
                around = item.get("content_around_reference", "") if isinstance(item, dict) else ""
                rel = (item.get("relative_path") if isinstance(item, dict) else None) or rel
                # Serena's line numbers are 0-based.
                for m in re.finditer(r"^\s*>\s*(\d+):", around, re.M):
                    found.add((rel, int(m.group(1)) + 1))
            check = check_lines(found, truth["references"])
            # Serena leaves the declaration out by design: count it apart.
            c = truth["cell_len"]
            result["references"] = dict(
                timing, **check, text=text[:400],
                declaration_missing=(c["file"], c["line"]) not in found,
                correct=check["n_false"] == 0 and check["n_missing"] == 0)

            timing, text = await cold_warm_async("get_symbols_overview",
                                                 {"relative_path": "rich/segment.py"})
            # {"Class": [names], "Variable": [names], ...}: the top level, grouped by kind.
            data = json.loads(text)
            names = sorted({n for group in data.values() for n in group
                            if isinstance(n, str)}) if isinstance(data, dict) else []
            result["outline"] = dict(timing, text=text[:400], names=names,
                                     correct=names == truth["outline"])

            timing, text = await cold_warm_async("get_diagnostics_for_file",
                                                 {"relative_path": PLANTED_FILE})
            # Each diagnostic's LSP range (0-based lines), grouped by severity and symbol.
            errors = sorted({int(x) + 1 for x in
                             re.findall(r'"start"\s*:\s*\{\s*"line"\s*:\s*(\d+)', text)})
            result["diagnostics"] = dict(timing, text=text[:600], errors=errors,
                                         correct=errors == truth["planted"]["errors"])

            timing, text = await cold_warm_async("find_symbol", {
                "name_path_pattern": "Console/print", "relative_path": "rich/console.py",
                "include_info": True})
            result["type_at"] = dict(timing, text=text[:400], correct="def print" in text)
            rss = 0
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        with open(f"/proc/{entry}/cmdline", "rb") as f:
                            cmd = f.read()
                        if b"start-mcp-server" in cmd and root.encode() in cmd:
                            total, procs = rss_tree_kb(int(entry))
                            rss = max(rss, total)
                            result["processes"] = procs
                    except OSError:
                        pass
            result["rss_mb"] = rss / 1024.0
    return result


def run_serena(root, serena, langserver):
    import asyncio

    home = tempfile.mkdtemp(prefix="agent-q-bench-serena-")
    try:
        with open(os.path.join(home, "serena_config.yml"), "w") as f:
            json.dump({"web_dashboard": False, "web_dashboard_open_on_launch": False,
                       "gui_log_window": False, "agent_interface": "tools",
                       "record_tool_usage_stats": False, "log_level": 30,
                       "ls_specific_settings": {"python": {"ls_path": langserver}},
                       "projects": []}, f)
        result = asyncio.run(serena_async(root, serena, langserver, home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(os.path.join(root, ".serena"), ignore_errors=True)
    emit(result)


# ---------------------------------------------------------------------------------------------
# agent-q over its MCP server


LOCATION = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+):", re.M)


def run_agentq(root, url, token):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "mcp_load", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 "mcp-load.py"))
    mcp_load = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mcp_load)
    truth = load_truth(root)
    result = {"side": "agent-q", "windows": {}}
    conn = mcp_load.Connection(url, token)
    conn.request("initialize", {"protocolVersion": mcp_load.PROTOCOL, "capabilities": {},
                                "clientInfo": {"name": "agent-q-bench-code", "version": "1"}})
    conn.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = conn.request("tools/list", {})
    tools = {t["name"] for t in listed["result"]["tools"]}
    wanted = ["find_definition", "find_references", "file_outline", "diagnostics", "type_at"]
    result["missing_tools"] = [t for t in wanted if t not in tools]
    if result["missing_tools"]:
        emit(result)
        return

    def call(name, arguments):
        answer = conn.request("tools/call", {"name": name, "arguments": arguments})
        if "error" in answer:
            raise RuntimeError(f"{name}: {answer['error']}")
        res = answer["result"]
        text = "".join(c.get("text", "") for c in res.get("content", []))
        if res.get("isError"):
            raise RuntimeError(f"{name}: {text[:300]}")
        return text

    def measure(key, name, arguments):
        # Wall-clock windows (time.time(), as Emacs's float-time) of the cold call and of the
        # warm ones, for the serving Emacs's timer lateness.
        # Each warm call's start (wall clock) and time, to pair it with the server's own time
        # for the request it made, as the serving Emacs recorded it.
        t0 = time.time()
        cold, text = timed(lambda: call(name, arguments))
        t1 = time.time()
        calls = []
        for _ in range(WARM):
            start = time.time()
            calls.append([start, timed(lambda: call(name, arguments))[0]])
        times = [ms for _, ms in calls]
        t2 = time.time()
        result["windows"][key] = {"cold": [t0, t1], "warm": [t1, t2]}
        return {"cold_ms": cold, "warm_p50_ms": statistics.median(times),
                "warm_max_ms": max(times), "warm_calls": calls}, text

    def locations(text):
        return [(m.group("file"), int(m.group("line"))) for m in LOCATION.finditer(text)]

    def guarded(key, fn):
        # One failing tool is that operation's answer, not the end of the run.
        try:
            fn()
        except Exception as err:  # noqa: BLE001 - reported, not hidden
            result[key] = {"correct": False, "error": str(err)[:500]}
        # Why an answer differs from the ground truth, in words, for the report.
        r = result[key]
        if not r.get("correct") and "error" not in r:
            text = r.get("text", "")
            cut = re.search(r"^\.\.\. (\d+) more not shown.*$", text, re.M)
            why = {"definition": lambda: f"found {r.get('found')}",
                   "type_at": lambda: "the hover text has no `def print(`",
                   "references": lambda: (f"{r['n_missing']} missing {r['missing'][:3]}, "
                                          f"{r['n_false']} not references {r['false'][:3]}, "
                                          f"declaration marked: {r['declaration_marked']}"),
                   "outline": lambda: ("top-level names missing: "
                                       + ", ".join(sorted(set(truth["outline"])
                                                          - set(r["names"])))
                                       + (f"; extra: {sorted(set(r['names']) - set(truth['outline']))}"
                                          if set(r["names"]) - set(truth["outline"]) else "")),
                   "diagnostics": lambda: f"errors at lines {r.get('errors')}"}[key]()
            if cut:
                why += f" (the answer was cut: \"{cut.group(0)}\")"
            r["why"] = why

    def op_definition():
        d = truth["definition"]
        timing, text = measure("definition", "find_definition",
                               {"symbol": "Console/print", "file": "rich/console.py"})
        found = locations(text)
        result["definition"] = dict(timing, found=found, text=text[:300],
                                    correct=found == [(d["file"], d["line"])])

    guarded("definition", op_definition)

    def op_type_at():
        c = truth["call"]
        timing, text = measure("type_at", "type_at",
                               {"file": c["file"], "line": c["line"], "column": c["column"]})
        result["type_at"] = dict(timing, text=text[:400], correct="def print" in text
                                 or "print(" in text)

    guarded("type_at", op_type_at)

    def op_references():
        cl = truth["cell_len"]
        timing, text = measure("references", "find_references",
                               {"file": cl["file"], "line": cl["line"], "column": cl["column"]})
        check = check_lines(locations(text), truth["references"])
        # The declaration's line is marked `declaration`.
        marked = re.search(rf"^{re.escape(cl['file'])}:{cl['line']}:\d+:.*\bdeclaration\b",
                           text, re.M) is not None
        result["references"] = dict(timing, **check, text=text[:300], declaration_marked=marked,
                                    correct=check["n_missing"] == 0 and check["n_false"] == 0
                                    and marked)

    guarded("references", op_references)

    def op_outline():
        timing, text = measure("outline", "file_outline", {"file": "rich/segment.py"})
        # One symbol a line, `KIND NAME (lines A-B)`, nested by indentation: the top level's names.
        names = {m.group(1) for m in re.finditer(r"^\S.*? (\S+) \(lines? \d+", text, re.M)}
        result["outline"] = dict(timing, text=text[:400] + "\n" + "\n".join(
            re.findall(r"^\.\.\. \d+ more not shown.*$", text, re.M)), names=sorted(names),
                                 correct=names == set(truth["outline"]))

    guarded("outline", op_outline)

    def op_diagnostics():
        timing, text = measure("diagnostics", "diagnostics", {"file": PLANTED_FILE})
        errors = sorted({line for f, line in locations(text)
                         if re.search(rf"^{re.escape(f)}:{line}:\d+: error\b", text, re.M)})
        result["diagnostics"] = dict(timing, text=text[:600], errors=errors,
                                     correct=errors == truth["planted"]["errors"])

    guarded("diagnostics", op_diagnostics)

    emit(result)


def main(argv):
    command = argv[1]
    if command == "prepare":
        prepare(os.path.abspath(argv[2]), os.path.abspath(argv[3]))
    elif command == "raw":
        run_raw(os.path.abspath(argv[2]), argv[3])
    elif command == "serena":
        run_serena(os.path.abspath(argv[2]), argv[3], argv[4])
    elif command == "agentq":
        run_agentq(os.path.abspath(argv[2]), argv[3], argv[4])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
