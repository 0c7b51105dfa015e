"""A stdio server, written by hand (no mcp_ref), whose answer to ``tools/call`` of ``deep`` nests
its result 100,000 deep (or argv[2] deep): ``[[[[...]]]]`` as the content, its id before the
result (argv[1] ``first``) or after it (``last``).  ``secrets`` is answered as deep, its result
holding secrets in :data:`SECRETS` (written as JSON text may write them: under an escaped key,
a key over 64 characters long, an array, an object).  Every other tool call is answered ``still
here``, however deep its arguments nest (tests/protocol/test_hardening_framing.py; 520 deep,
which Python's own parser still reads, and the inspector: tests/inspector/)."""

import json
import sys

DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
#: The secrets of the answer to ``secrets``: the members of its result, as written, then each
#: secret value a reader must never see.
SECRETS = (
    '"api_key":["sk-ARRAY-SECRET"],"client_secret":{"value":"OBJECT-SECRET"},'
    '"pass\\u0077ord":"ESCAPED-KEY-SECRET","' + "x" * 70 + '_token":"LONG-KEY-SECRET"'
)
SECRET_VALUES = ("ARRAY-SECRET", "OBJECT-SECRET", "ESCAPED-KEY-SECRET", "LONG-KEY-SECRET")


def main() -> None:
    id_first = sys.argv[1] == "first"
    out = sys.stdout
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and answers need no reply
        request_id = json.dumps(message["id"])
        name = message["params"]["name"] if message["method"] == "tools/call" else None
        if name in ("deep", "secrets"):
            secrets = SECRETS + "," if name == "secrets" else ""
            nested = "{" + secrets + '"content":' + "[" * DEPTH + "]" * DEPTH + "}"
            members = [f'"id":{request_id}', f'"result":{nested}']
            out.write(
                '{"jsonrpc":"2.0",' + ",".join(members if id_first else members[::-1]) + "}\n"
            )
            out.flush()
            continue
        if message["method"] == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "deep", "version": "0"},
            }
        elif message["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": "still here"}]}
        else:
            result = {}
        out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
