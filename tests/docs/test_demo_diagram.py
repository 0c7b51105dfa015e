"""docs/demo-diagram.md: its one block is a diagram, not code."""

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run here".
BLOCKS = {
    "sequenceDiagram": "SKIP: a Mermaid diagram that `mcp-ref demo --diagram` drew; its content is "
    "checked by tests/workbench/test_cli.py::test_the_demo_diagram_is_committed_and_linked",
}
