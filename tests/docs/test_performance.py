"""docs/performance.md: its one block runs the benchmark."""

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "python benchmarks/bench.py --state-only": "SKIP: the benchmark runs for minutes; "
    "tests/workbench/test_bench.py::test_help_from_another_directory runs --help, and "
    "tests/workbench/test_bench.py::test_a_tiny_shared_state_run_prints_memory_against_redis "
    "a --state-only --quick round",
}
