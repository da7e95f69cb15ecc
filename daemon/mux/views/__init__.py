"""The shared server's answers in each client's own terms: InitializeResult, capabilities, versions, opens."""
