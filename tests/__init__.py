"""urlsan's tests.  A package, so that every test imports the harness one way:
``from tests.harness import …`` (pytest puts the checkout's root on sys.path for the test
packages below; tests/core, cli, audit and addon are plain folders and need no harness)."""
