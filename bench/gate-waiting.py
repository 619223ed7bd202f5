"""Hold N calls of agent-q's own MCP tools pending in Emacs: the reference of bench section 8.

Usage: python3 gate-waiting.py URL TOKEN N DIRECTORY

Each of N threads opens an MCP session (as bench/mcp-load.py does) and calls write_file on a
file in DIRECTORY, a dangerous call that waits for the user's decision in Emacs; the threads
wait for their answer, or until the process is killed.  Prints "started" once every call has
been sent.  Standard library only.
"""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

Connection = import_module("mcp-load").Connection


def main():
    url, token, n, directory = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    sent = threading.Barrier(n + 1)

    def worker(i):
        connection = Connection(url, token)
        connection.initialize()
        sent.wait()
        try:
            connection.call("write_file", {"path": os.path.join(directory, f"w{i}.txt"),
                                           "content": "x"})
        except Exception:  # noqa: BLE001 - denied or cut off: the bench only needs the wait
            pass

    for i in range(n):
        threading.Thread(target=worker, args=(i,), daemon=True).start()
    sent.wait()
    print("started", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
