#!/usr/bin/env python3
"""A scripted model server for the terminal agents in agent-q's end-to-end tests.

Usage: fake-agent-model.py --dialect anthropic|gemini|responses --script FILE
                           --port-file FILE --record FILE
                           [--max-requests N] [--timeout SECONDS]

It listens on 127.0.0.1 only, on a free port that it writes to --port-file
(atomically, once it listens), and speaks one model API:

  anthropic  Anthropic Messages (Claude Code): POST /v1/messages, answered
             with the Messages SSE stream (message_start,
             content_block_start/delta/stop, message_delta, message_stop).
  gemini     Gemini (Gemini CLI): POST .../models/M:streamGenerateContent
             (SSE of GenerateContentResponse) and :generateContent (JSON).
  responses  OpenAI Responses (Codex CLI): POST /v1/responses, answered with
             the Responses SSE stream (response.created,
             response.output_item.added/done, response.completed).

--script is a JSON object {"steps": [...]}.  The agent's Nth conversation
request (one that offers tools) gets the Nth step, which is either

  {"tool": "NAME", "arguments": {...}}          a call of the tool NAME
  {"tool": "NAME", "namespace": "NS", ...}      (responses) a call inside a
                                                namespace tool
  {"text": "Some text"}                         a final answer

A step's call id is "call_N" (N counts from 1).  When the --script file
changes while the server runs (a test rewrites it between two prompts of
one agent session), the next conversation request gets the first step of
the new script, and the counting starts again.  A script may also name
its turn's prompt, {"prompt": "TEXT", "steps": [...]}: then only a
request whose user messages contain TEXT takes a step (a test gives each
turn a prompt of its own, which no earlier turn's contains).  Any other
(an agent finishing a turn the user cancelled, after the test wrote the
next turn's script) is recorded as kind "stale" and answered with a
short final text, so that it cannot take the next turn's steps.
Requests that offer no
tools are the agents' own helpers (Gemini CLI's routing classifier and
next-speaker check), as is Claude's prompt suggestion after a turn (which
offers them): they are answered with a JSON object that fits the
response schema they ask for (or a short text) and take no step.

Every request is appended to --record as one JSON line before it is answered:
{"path", "kind" ("step", "stale" or "helper"), "step", "prompt" (the
script's, when it names one), "results", "body", "time" (when it was
received, seconds since the epoch)}, where
"results" lists the tool results the request carries, oldest first, each
{"name", "text", "error"} (error: true, false, or null when the dialect
does not say), so a test can check what the agent sent back to its model.
A request beyond the script gets HTTP 500.  The server stops after
--max-requests requests (default 40) or --timeout seconds (default 120),
whichever comes first.  Standard library only.
"""

import argparse
import http.server
import json
import os
import sys
import threading
import time


def text_of(value):
    """The text in VALUE: a string, a list of content parts, or an object."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(part) for part in value)
    if isinstance(value, dict):
        for key in ("text", "output", "content", "error"):
            if key in value:
                return text_of(value[key])
    return json.dumps(value)


# ---------------------------------------------------------------- results


def anthropic_results(body):
    """The tool_result blocks in an Anthropic Messages request."""
    results = []
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append({"name": block.get("tool_use_id"),
                                "text": text_of(block.get("content")),
                                "error": bool(block.get("is_error", False))})
    return results


def gemini_results(body):
    """The functionResponse parts in a Gemini request."""
    results = []
    for content in body.get("contents", []):
        for part in content.get("parts", []) or []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if response is None:
                continue
            payload = response.get("response") or {}
            error = "error" in payload
            results.append({"name": response.get("name"),
                            "text": text_of(payload.get("error") if error else payload),
                            "error": error})
    return results


def responses_results(body):
    """The function_call_output items in a Responses request."""
    results = []
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            results.append({"name": item.get("call_id"),
                            "text": text_of(item.get("output")),
                            "error": None})
    return results


def anthropic_suggestion(body):
    """Whether BODY is Claude's request for a prompt suggestion after a turn.

    claude-agent-acp (Claude over ACP) makes one after each turn, offering
    the tools; it is a helper, not a step of the conversation."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    return last.get("role") == "user" and text_of(last.get("content")).startswith(
        "[SUGGESTION MODE:")


def user_text(body, dialect):
    """The text of every user message in BODY, the agent's tool results left out."""
    if dialect == "anthropic":
        return "\n".join(text_of([b for b in message.get("content")
                                   if not (isinstance(b, dict) and b.get("type") == "tool_result")]
                                  if isinstance(message.get("content"), list)
                                  else message.get("content"))
                         for message in body.get("messages") or []
                         if message.get("role") == "user")
    if dialect == "gemini":
        return "\n".join(part.get("text", "")
                         for content in body.get("contents") or []
                         if content.get("role") == "user"
                         for part in content.get("parts") or []
                         if isinstance(part, dict))
    items = body.get("input")
    return "\n".join(text_of(item.get("content"))
                     for item in (items if isinstance(items, list) else [])
                     if isinstance(item, dict) and item.get("role") == "user")


# ---------------------------------------------------------------- answers


def sse(event, data):
    """One server-sent event, with an event name when EVENT is not None."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def anthropic_stream(step, number, model):
    """The Messages SSE stream for STEP."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    yield sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
    if "tool" in step:
        text = json.dumps(step.get("arguments", {}))
        half = len(text) // 2
        yield sse("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "tool_use",
                                                            "id": f"call_{number}",
                                                            "name": step["tool"], "input": {}}})
        for piece in (text[:half], text[half:]):
            yield sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": piece}})
        stop = "tool_use"
    else:
        yield sse("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}})
        yield sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": step["text"]}})
        stop = "end_turn"
    yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield sse("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 5}})
    yield sse("message_stop", {"type": "message_stop"})


def anthropic_message(text, model):
    """A non-streaming Messages answer with TEXT."""
    return {"id": "msg_helper", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}


def gemini_response(parts, model):
    """A GenerateContentResponse with PARTS."""
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": model}


def gemini_parts(step, number):
    """The parts of the Gemini answer for STEP."""
    if "tool" in step:
        return [{"functionCall": {"id": f"call_{number}", "name": step["tool"],
                                  "args": step.get("arguments", {})}}]
    return [{"text": step["text"]}]


def from_schema(schema):
    """A value that fits the JSON schema SCHEMA (Gemini's helper requests)."""
    if not isinstance(schema, dict):
        return "ok"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        return {name: from_schema(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "scripted"


def responses_events(step, number, model):
    """The Responses SSE stream for STEP."""
    response = {"id": f"resp_{number}", "object": "response", "created_at": 0,
                "model": model, "status": "in_progress", "output": []}
    yield sse("response.created", {"type": "response.created", "response": response})
    if "tool" in step:
        item = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}",
                "name": step["tool"], "arguments": json.dumps(step.get("arguments", {}))}
        if step.get("namespace"):
            item["namespace"] = step["namespace"]
    else:
        item = {"type": "message", "id": f"msg_{number}", "role": "assistant",
                "content": [{"type": "output_text", "text": step["text"], "annotations": []}]}
    yield sse("response.output_item.added", {"type": "response.output_item.added",
                                             "output_index": 0,
                                             "item": dict(item, status="in_progress")})
    done = dict(item, status="completed")
    yield sse("response.output_item.done", {"type": "response.output_item.done",
                                            "output_index": 0, "item": done})
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    yield sse("response.completed", {"type": "response.completed",
                                     "response": dict(response, status="completed",
                                                      output=[done], usage=usage)})


# ---------------------------------------------------------------- server


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialect", required=True, choices=["anthropic", "gemini", "responses"])
    parser.add_argument("--script", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--max-requests", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    def read_script():
        with open(args.script, encoding="utf-8") as f:
            text = f.read()
        script = json.loads(text)
        return text, script["steps"], script.get("prompt")

    script_text, steps, prompt = read_script()
    state = {"requests": 0, "steps": 0, "text": script_text, "script": steps, "prompt": prompt}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def send_body(self, status, content_type, data):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def send_json(self, value, status=200):
            self.send_body(status, "application/json", json.dumps(value).encode())

        def send_sse(self, events):
            self.send_body(200, "text/event-stream", "".join(events).encode())

        def do_GET(self):
            with lock:
                state["requests"] += 1
            self.record({"path": self.path, "kind": "get", "body": None})
            self.send_json({"error": {"message": "not scripted"}}, 404)

        def record(self, entry):
            with lock, open(args.record, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            path = self.path.split("?")[0]
            if args.dialect == "anthropic":
                offers_tools = bool(body.get("tools")) and not anthropic_suggestion(body)
                results = anthropic_results(body)
            elif args.dialect == "gemini":
                offers_tools = bool(body.get("tools")) and not body.get("generationConfig", {}).get(
                    "responseJsonSchema") and not body.get("generationConfig", {}).get("responseSchema")
                results = gemini_results(body)
            else:
                offers_tools = bool(body.get("tools"))
                results = responses_results(body)
            asked = user_text(body, args.dialect) if offers_tools else ""
            kind = "step" if offers_tools else "helper"
            with lock:
                state["requests"] += 1
                number = None
                if offers_tools:
                    text, new_steps, new_prompt = read_script()
                    if text != state["text"]:
                        state["text"], state["script"], state["steps"] = text, new_steps, 0
                        state["prompt"] = new_prompt
                    if state["prompt"] is not None and state["prompt"] not in asked:
                        kind = "stale"
                    else:
                        state["steps"] += 1
                        number = state["steps"]
                steps, turn = state["script"], state["prompt"]
            entry = {"path": self.path, "kind": kind, "step": number, "prompt": turn,
                     "results": results, "body": body, "time": time.time()}
            self.record(entry)
            model = body.get("model") or "scripted"

            if not offers_tools:
                return self.helper(path, body, model)
            if kind == "stale":
                number, steps = 1, [{"text": "That turn is over."}]
            if number > len(steps):
                return self.send_json({"error": {"message": "beyond the script"}}, 500)
            step = steps[number - 1]
            if args.dialect == "anthropic":
                return self.send_sse(anthropic_stream(step, number, model))
            if args.dialect == "gemini":
                answer = gemini_response(gemini_parts(step, number), model)
                if "streamGenerateContent" in path:
                    return self.send_sse([sse(None, answer)])
                return self.send_json(answer)
            return self.send_sse(responses_events(step, number, model))

        def helper(self, path, body, model):
            """Answer a request that offers no tools."""
            if args.dialect == "gemini":
                if path.endswith(":countTokens"):
                    return self.send_json({"totalTokens": 10})
                config = body.get("generationConfig") or {}
                schema = config.get("responseJsonSchema") or config.get("responseSchema")
                text = json.dumps(from_schema(schema)) if schema else "ok"
                answer = gemini_response([{"text": text}], model)
                if "streamGenerateContent" in path:
                    return self.send_sse([sse(None, answer)])
                return self.send_json(answer)
            if args.dialect == "anthropic":
                if path.endswith("/count_tokens"):
                    return self.send_json({"input_tokens": 10})
                if body.get("stream"):
                    return self.send_sse(anthropic_stream({"text": "ok"}, 0, model))
                return self.send_json(anthropic_message("ok", model))
            return self.send_sse(responses_events({"text": "ok"}, 0, model))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)

    deadline = time.monotonic() + args.timeout
    server.timeout = 0.2
    while time.monotonic() < deadline and state["requests"] < args.max_requests:
        server.handle_request()
    # Let the last answers be written before the process ends.
    time.sleep(0.2)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
