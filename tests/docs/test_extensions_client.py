"""docs/extensions-client.md: its blocks, run as written."""

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run here".
BLOCKS = {
    "client.add_extension(Confirmer())": "SKIP: a fragment: Confirmer stands for an extension of "
    "the reader's own, and server.py for their server",
    "class AuditLog(Extension)": "SKIP: run against a real stdio server in both eras by "
    "tests/extensions/test_client_extensions.py::test_the_documented_audit_log_works_as_the_docs_say",
}
