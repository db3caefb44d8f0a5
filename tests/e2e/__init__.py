"""End to end: real mitmdump, upstreams, recorders and a browser, through tests.harness."""
