"""The hybrid search: answer quality without hand labels, latency, tuning and ablations.

`corpus` prepares docstring-stripped copies of pinned projects
(`docstring_strip`) whose docstrings become the queries; `evaluate` runs them
through a real daemon (`daemon_search`) and in process (`offline`), scored by
`ranking`; `tune` and `ablate` work on the tuning project and the saved
indexes; `pyright_cancel` reproduces a pyright defect found on the way.
"""
