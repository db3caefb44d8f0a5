"""The files of examples/ run as a user runs them, against the sites of tests.harness."""
