"""The demo walkthrough's traffic is valid against the official schema, at every revision."""

import pytest

from mcp_ref import SUPPORTED_VERSIONS


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_basic_traffic_is_schema_valid(connect, wire, version):
    client = connect(protocol_version=version)
    assert client.protocol_version == version
    assert [t.name for t in client.list_tools()][:2] == ["echo", "add"]
    assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
    assert client.call_tool("weather", {"city": "Oslo"}).is_error is False
    client.read_resource("demo://readme")
    client.list_resource_templates()
    client.get_prompt("greet", {"name": "x"})
    client.list_prompts()
    assert len(wire.messages) > 10
