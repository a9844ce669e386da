#!/usr/bin/env python3
"""A small MCP stdio server for the gateway's tests: plain JSON over stdin
and stdout, no packages.

Tools: echo (answers "ok"), and flood ({"n": N}), which sends N progress
notifications (when the call carries a progressToken) and N log messages
before its result.

Flags: --banner TEXT writes TEXT (not JSON) on stdout before anything else,
as servers that print a greeting do; --exit N exits with status N when
stdin ends.
"""
import json
import sys

args = sys.argv[1:]
banner, status = None, 0
while args:
    flag = args.pop(0)
    if flag == "--banner":
        banner = args.pop(0)
    elif flag == "--exit":
        status = int(args.pop(0))

out = sys.stdout


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


if banner is not None:
    out.write(banner + "\n")
    out.flush()

for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue  # a notification, or an answer to nothing we asked
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "upstream.py", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}},
            {"name": "flood", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        ]}
    elif method == "tools/call" and params.get("name") in ("echo", "flood"):
        if params["name"] == "flood":
            n = int((params.get("arguments") or {}).get("n", 0))
            token = (params.get("_meta") or {}).get("progressToken")
            for i in range(n):
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": i + 1, "total": n}})
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "line %d" % (i + 1)}})
        result = {"content": [{"type": "text", "text": "ok"}]}
    elif method == "logging/setLevel" or method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found: " + method}})
        continue
    send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

sys.exit(status)
