"""A proxy on stdio in front of the HTTP target named by argv[1], with a Policy added: the rate
limit argv[2] (``"3/minute"``) and an ``authorize`` denying every name with "secret" in it
(tests/proxy/test_proxy_policy.py)."""

import sys

from mcp_ref.extensions.policy import Policy
from mcp_ref.proxy.server import proxy_server


def authorize(principal, action, name) -> bool:
    return "secret" not in name


if __name__ == "__main__":
    proxy = proxy_server(sys.argv[1], client_options={"timeout": 30})
    proxy.add_extension(Policy(authorize=authorize, rate_limit=sys.argv[2]))
    try:
        proxy.run()
    finally:
        proxy.close()
