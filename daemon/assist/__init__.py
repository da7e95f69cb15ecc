"""Assistant tools over the shared instances: what `lensmux mcp` answers, computed inside the daemon.

Each tool resolves a symbol or a 1-based position, asks the instance that
editors share (so unsaved buffers are what it sees), and answers with short
text for a model and a structured result; bad input is a `ToolError` whose
message says what to do next. Nothing here knows MCP: the CLI side turns these
answers into protocol messages.
"""
