"""What the multiplexer costs and how it holds up: one question per runnable module.

`overhead` (clangd latency direct vs through lensmux, echo throughput; built
from `clangd_latency` and `echo_throughput`), `hop_floor` (what any Python
process in the middle costs), `profile_daemon` (where the daemon's time goes
per round trip), `load` (many clients on the echo server and on clangd, every
answer accounted for, and the cache figure; built from `load_lanes`,
`load_echo`, `load_clangd`, `load_sites` and `cache_figure`). The `*_report`
modules turn saved results into the markdown of docs/benchmarks.md.
Nothing here measures indexing or search.
"""
