#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for agent-q's bridge tests.

Usage: fake-openai.py --script FILE --port-file FILE --record FILE
                      [--max-requests N] [--timeout SECONDS]

It listens on 127.0.0.1 only, on a free port that it writes to --port-file
(atomically, once it listens).  --script is a JSON object {"responses": [...]}:
the Nth POST gets the Nth response, which is either

  {"tool_calls": [{"id": "call_1", "name": "read_file",
                   "arguments": {"path": "/tmp/x"}}]}     (arguments: an object,
                                                           or a raw JSON string)
  {"content": "Some text"}

either with an optional "delay" (seconds, at most 10) before it is sent.

Every request is appended to --record as one JSON line {"path": ..., "body": ...}
before it is answered, so a test can read the follow-up request a client sent
with the tool results.  A request whose body has "stream": true is answered with
server-sent events (chat.completion.chunk deltas, then "data: [DONE]"), as
OpenAI streams.  The server stops after --max-requests requests (default: the
number of scripted responses) or --timeout seconds (default 120), whichever
comes first; a request beyond the script gets HTTP 500.  Standard library only.
"""

import argparse
import http.server
import json
import os
import sys
import time


def completion(response, model):
    """A non-streaming chat.completion object for RESPONSE."""
    message = {"role": "assistant", "content": response.get("content")}
    finish = "stop"
    if "tool_calls" in response:
        message["tool_calls"] = [
            {"id": call["id"], "type": "function",
             "function": {"name": call["name"], "arguments": arguments_text(call)}}
            for call in response["tool_calls"]]
        finish = "tool_calls"
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def arguments_text(call):
    """The call's arguments as the JSON string OpenAI sends."""
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def chunks(response, model):
    """The chat.completion.chunk objects streaming RESPONSE."""
    def chunk(delta, finish=None):
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if "tool_calls" in response:
        for index, call in enumerate(response["tool_calls"]):
            head = {"index": index, "id": call["id"], "type": "function",
                    "function": {"name": call["name"], "arguments": ""}}
            delta = {"tool_calls": [head]}
            if index == 0:
                delta = {"role": "assistant", "content": None, "tool_calls": [head]}
            yield chunk(delta)
            text = arguments_text(call)
            # The arguments in two pieces, as a model streams them.
            half = len(text) // 2
            for piece in (text[:half], text[half:]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls")
    else:
        yield chunk({"role": "assistant", "content": ""})
        text = response.get("content") or ""
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            yield chunk({"content": piece})
        yield chunk({}, "stop")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--max-requests", type=int)
    parser.add_argument("--timeout", type=float, default=120.0)
    options = parser.parse_args()

    with open(options.script, encoding="utf-8") as f:
        responses = json.load(f)["responses"]
    limit = options.max_requests if options.max_requests is not None else len(responses)
    state = {"served": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw.decode("utf-8"))
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            with open(options.record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "body": body}) + "\n")
                f.flush()
            index = state["served"]
            state["served"] += 1
            self.close_connection = True
            if index >= len(responses):
                self.send_json(500, {"error": {"message": "fake-openai: no scripted response left",
                                               "type": "server_error"}})
                return
            response = responses[index]
            # "delay": seconds to wait before answering (at most 10), so a
            # test can act while the client waits for the model.
            time.sleep(min(float(response.get("delay", 0)), 10.0))
            model = body.get("model", "fake-model") if isinstance(body, dict) else "fake-model"
            if isinstance(body, dict) and body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for item in chunks(response, model):
                    self.wfile.write(("data: " + json.dumps(item) + "\n\n").encode("utf-8"))
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            else:
                self.send_json(200, completion(response, model))

        def send_json(self, status, value):
            data = json.dumps(value).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 0.2
    temporary = options.port_file + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(temporary, options.port_file)

    deadline = time.monotonic() + options.timeout
    while state["served"] < limit and time.monotonic() < deadline:
        server.handle_request()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
