"""LSP base protocol: framing and JSON-RPC envelopes. The only code that knows the wire format."""
