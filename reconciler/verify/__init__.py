"""Did the brokers take it? What `apply --verify` expects the brokers to report after a plan was written
(`expect`), how one broker answer is judged against it (`judge`), and the per-key outcome (`report`).

Pure: the questions are asked by `reconciler.brokers` (the Admin API adapter)."""
