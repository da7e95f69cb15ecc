"""Resilience tests: bad input, fuzzing, backpressure and security against a real daemon."""
