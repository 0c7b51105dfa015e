"""docs/transports.md: its blocks, run as written."""

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run here".
BLOCKS = {
    "# socket_transport.py": "SKIP: run as written by "
    "tests/protocol/test_transport_contract.py::test_the_socket_transport_example_runs_as_written",
}
