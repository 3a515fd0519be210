"""Secrets: references in manifests, Kafka's password encoding, and comparing live encoded values.

    refs.py     `{secret: {env|file}}` references resolved to `Secret` values (never printed)
    encoder.py  Kafka's PasswordEncoder (PBKDF2 + AES-CBC/GCM), byte-compatible with the brokers
    compare.py  live encoded passwords against the desired ones: changed, unchanged, unknown, re-encode
"""
