"""Kafka's validation rules, one module per area; `offline.validate` runs all offline rules on a desired state.
The package imports none of its modules itself, so importing one rule module loads only what that one needs."""
